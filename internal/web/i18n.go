package web

import (
	"net/http"
	"strings"

	cldr "golang.org/x/text/feature/plural"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/message/catalog"

	"github.com/npugrade/npugrade/internal/domain"
)

// The pages speak English and Simplified Chinese. The language comes from
// the "lang" cookie the switch on every page sets, else from
// Accept-Language. Messages are keyed by their English text's short id;
// a missing Chinese message falls back to English, a missing key shows
// itself (so a test catches it).

const (
	langEN = "en"
	langZH = "zh-CN"
)

var supported = []language.Tag{language.English, language.SimplifiedChinese}
var matcher = language.NewMatcher(supported)

// PrefersChinese reports whether r's reader gets the pages in Chinese
// (the lang cookie, else Accept-Language): the API words the problems it
// has in both languages by the same rule.
func PrefersChinese(r *http.Request) bool {
	cookie := ""
	if c, err := r.Cookie(langCookie); err == nil {
		cookie = c.Value
	}
	return pickLang(cookie, r.Header.Get("Accept-Language")) == langZH
}

// pickLang chooses between English and Chinese.
func pickLang(cookie, acceptLanguage string) string {
	switch strings.ToLower(cookie) {
	case "en":
		return langEN
	case "zh-cn", "zh":
		return langZH
	}
	tags, _, err := language.ParseAcceptLanguage(acceptLanguage)
	if err != nil || len(tags) == 0 {
		return langEN
	}
	_, i, conf := matcher.Match(tags...)
	if conf == language.No || i == 0 {
		return langEN
	}
	return langZH
}

var messages = map[string][2]string{ // key: {en, zh-CN}
	"app":                   {"npugrade", "npugrade 自动评分"},
	"skip":                  {"Skip to content", "跳到正文"},
	"nav.exercises":         {"Exercises", "练习"},
	"nav.account":           {"My devices", "我的设备"},
	"device.title":          {"Sign in a device", "设备登录"},
	"device.ask":            {"A program asks to sign in as you (learner rights only):", "有程序请求以你的身份登录（仅学员权限）："},
	"device.client":         {"Program", "程序"},
	"device.code":           {"Code", "验证码"},
	"device.check":          {"Approve only if this code is the one your notebook or terminal shows.", "仅当此验证码与你的笔记本或终端显示的一致时才批准。"},
	"device.enter":          {"Enter the code your notebook or terminal shows", "输入笔记本或终端显示的验证码"},
	"device.show":           {"Continue", "继续"},
	"device.approve":        {"Approve", "批准"},
	"device.deny":           {"Deny", "拒绝"},
	"device.approved":       {"Signed in. You can close this page and return to your notebook or terminal.", "登录成功。可以关闭本页，回到笔记本或终端。"},
	"device.denied":         {"Denied. The program was not signed in.", "已拒绝。该程序未登录。"},
	"device.bad":            {"This code is unknown, expired or already used. Start the sign-in again in your notebook or terminal.", "此验证码不存在、已过期或已使用。请在笔记本或终端中重新开始登录。"},
	"device.runner":         {"Runner accounts cannot approve a sign-in.", "执行节点账户不能批准登录。"},
	"account.title":         {"My devices", "我的设备"},
	"account.intro":         {"Tokens that can act as you. Revoke one you no longer use: it stops working at once.", "可以代表你操作的令牌。不再使用的请撤销，撤销后立即失效。"},
	"account.label":         {"Device", "设备"},
	"account.scope":         {"Rights", "权限"},
	"account.created":       {"Signed in", "登录时间"},
	"account.used":          {"Last used", "最近使用"},
	"account.revoke":        {"Revoke", "撤销"},
	"account.none":          {"No tokens.", "没有令牌。"},
	"account.unlabelled":    {"(token from an instructor)", "（教师发放的令牌）"},
	"account.full":          {"full", "完整"},
	"account.learner":       {"learner", "学员"},
	"account.revoked":       {"Token revoked.", "令牌已撤销。"},
	"login.scoped":          {"This token is limited to learner use and cannot sign in to the pages. Sign in with your own token.", "此令牌仅限学员使用，不能登录网页。请使用你自己的令牌登录。"},
	"nav.dashboard":         {"Dashboard", "总览"},
	"nav.gradebook":         {"Gradebook", "成绩册"},
	"nav.users":             {"Users & tokens", "用户与令牌"},
	"nav.runners":           {"Runners", "执行节点"},
	"nav.main":              {"Main", "主导航"},
	"lang.switch":           {"Language", "语言"},
	"signed_in_as":          {"Signed in as", "当前用户"},
	"logout":                {"Sign out", "退出登录"},
	"logout.title":          {"Sign out", "退出登录"},
	"logout.confirm":        {"Sign out of npugrade in this browser?", "确定在此浏览器中退出 npugrade 吗？"},
	"login.title":           {"Sign in", "登录"},
	"login.token":           {"API token", "API 令牌"},
	"login.help":            {"Paste the token your instructor gave you (it starts with npg_).", "粘贴教师发给你的令牌（以 npg_ 开头）。"},
	"login.submit":          {"Sign in", "登录"},
	"login.jupyterhub":      {"Sign in with JupyterHub", "使用 JupyterHub 登录"},
	"login.oidc":            {"Sign in with your institution", "使用机构账号登录"},
	"login.bad":             {"That token is not valid.", "令牌无效。"},
	"login.runner":          {"Runner tokens cannot sign in to the pages.", "执行节点令牌不能登录网页。"},
	"forbidden":             {"You may not open this page.", "你无权打开此页面。"},
	"notfound":              {"Not found.", "未找到。"},
	"unavailable":           {"The database is unavailable right now; please try again in a few seconds.", "数据库暂时不可用，请几秒后重试。"},
	"storagefull":           {"The server cannot store anything right now (its storage is full); nothing was saved. Please tell your instructor.", "服务器存储空间已满，暂时无法保存任何内容（本次未保存）。请告知教师。"},
	"error.title":           {"Something went wrong", "出错了"},
	"csrf":                  {"The form expired or came from another site; reload the page and try again.", "表单已过期或来自其他网站，请刷新页面后重试。"},
	"exercises.title":       {"Your exercises", "我的练习"},
	"exercise":              {"Exercise", "练习"},
	"status":                {"Status", "状态"},
	"counted":               {"Score (best or latest, as the exercise counts)", "计分成绩（按练习规则取最高或最新）"},
	"score":                 {"Score", "得分"},
	"attempts":              {"Attempts", "提交次数"},
	"open":                  {"Open", "打开"},
	"not_submitted":         {"not submitted", "未提交"},
	"starter":               {"Download the starter notebook", "下载练习笔记本"},
	"upload.title":          {"Submit your notebook", "提交笔记本"},
	"upload.file":           {"Notebook file (.ipynb)", "笔记本文件（.ipynb）"},
	"upload.submit":         {"Submit for grading", "提交评分"},
	"upload.failed":         {"The notebook was not accepted:", "笔记本未被接受："},
	"history":               {"Your attempts", "提交记录"},
	"no_attempts":           {"No attempts yet.", "尚无提交。"},
	"submitted":             {"Submitted", "提交时间"},
	"graded_at":             {"Graded", "评分时间"},
	"submission":            {"Submission", "提交"},
	"submission.title":      {"Submission", "提交详情"},
	"feedback":              {"Feedback per question", "逐题反馈"},
	"question":              {"Question", "题目"},
	"question.n":            {"Question %d", "第 %d 题"},
	"question.hidden":       {"hidden test", "隐藏测试"},
	"verdict":               {"Verdict", "结果"},
	"points":                {"Points", "分数"},
	"message":               {"Message", "说明"},
	"observed":              {"Your output", "你的输出"},
	"expected":              {"Expected", "期望输出"},
	"diff":                  {"Difference", "差异"},
	"not_counted":           {"not counted on this runner", "此节点上不计分"},
	"live.help":             {"This page updates by itself while the notebook waits and runs.", "排队和运行期间本页面会自动更新。"},
	"st.queued":             {"queued", "排队中"},
	"st.running":            {"running", "运行中"},
	"st.graded":             {"graded", "已评分"},
	"check.badge":           {"check", "检查"},
	"check.help":            {"an uncounted check from the notebook client: no attempt used, not in the gradebook", "来自笔记本客户端的检查：不计次数，不计入成绩册"},
	"st.failed":             {"failed", "失败"},
	"st.needs-manual":       {"needs manual grading", "待人工评分"},
	"back":                  {"Back", "返回"},
	"learner":               {"Learner", "学员"},
	"dash.title":            {"Instructor dashboard", "教师总览"},
	"dash.per_day":          {"Submissions per day (last 14 days, UTC)", "每日提交数（近 14 天，UTC）"},
	"dash.queue":            {"Queue", "队列"},
	"dash.latency":          {"Grading latency (last 500 graded)", "评分延迟（最近 500 份）"},
	"dash.latency.none":     {"Nothing graded yet.", "尚无评分记录。"},
	"dash.runners":          {"Runner fleet", "执行节点"},
	"dash.no_runners":       {"No runner has registered yet.", "尚无执行节点注册。"},
	"dash.exercises":        {"Exercises", "练习"},
	"dash.recent":           {"Recent submissions", "最近提交"},
	"state":                 {"State", "状态"},
	"jobs":                  {"Jobs", "任务数"},
	"runner":                {"Runner", "节点"},
	"profile":               {"Profile", "配置"},
	"env_verdict":           {"Environment", "环境检查"},
	"labels":                {"Labels", "标签"},
	"last_seen":             {"Last seen", "最近在线"},
	"draining":              {"Draining", "排空"},
	"yes":                   {"yes", "是"},
	"no":                    {"no", "否"},
	"ex.title":              {"Exercise statistics", "练习统计"},
	"ex.hist":               {"Counted score per learner (% of maximum)", "学员计分分布（占满分百分比）"},
	"ex.passrate":           {"Pass rate per question", "逐题通过率"},
	"ex.failures":           {"Most common failures", "最常见的失败"},
	"ex.no_failures":        {"No failures recorded.", "没有失败记录。"},
	"count":                 {"Count", "次数"},
	"learners":              {"learners", "名学员"},
	"gb.title":              {"Gradebook", "成绩册"},
	"gb.filter":             {"Filter", "筛选"},
	"gb.all":                {"All exercises", "全部练习"},
	"gb.learner":            {"Login or name contains", "登录名或姓名包含"},
	"gb.apply":              {"Apply", "应用"},
	"gb.csv":                {"Export CSV", "导出 CSV"},
	"gb.policy":             {"Counts", "计分规则"},
	"gb.login":              {"Login (student number)", "登录名（学号）"},
	"gb.name":               {"Name", "姓名"},
	"gb.total":              {"Total", "总分"},
	"gb.pages":              {"Gradebook pages", "成绩册分页"},
	"gb.prev":               {"Previous", "上一页"},
	"gb.next":               {"Next", "下一页"},
	"gb.of":                 {"of", "共"},
	"gb.late":               {"late", "迟交"},
	"gb.late_title":         {"submitted after the deadline, the late penalty applied; points before it:", "截止后提交，已按迟交规则扣分；扣分前得分："},
	"gb.none":               {"No learners match.", "没有匹配的学员。"},
	"sub.notebook":          {"Executed notebook", "执行后的笔记本"},
	"sub.not_executed":      {"This submission has not been executed yet.", "该提交尚未执行。"},
	"sub.download":          {"Download the executed notebook", "下载执行后的笔记本"},
	"sub.html_output":       {"HTML output (shown in a sandbox, scripts disabled)", "HTML 输出（沙箱显示，脚本已禁用）"},
	"sub.image":             {"image output", "图片输出"},
	"sub.cell":              {"Cell", "单元格"},
	"sub.runner":            {"Runner", "执行节点"},
	"sub.version":           {"Exercise version", "练习版本"},
	"sub.seed":              {"Probe seed", "隐藏测试种子"},
	"users.title":           {"Users and tokens", "用户与令牌"},
	"users.name":            {"Name", "名称"},
	"users.role":            {"Role", "角色"},
	"users.add":             {"Add a user", "添加用户"},
	"users.create":          {"Create user", "创建用户"},
	"users.tokens":          {"Tokens", "令牌"},
	"users.new_token":       {"New token", "新令牌"},
	"users.revoke":          {"Revoke", "吊销"},
	"users.revoked":         {"revoked", "已吊销"},
	"users.active":          {"active", "有效"},
	"users.token_shown":     {"Copy this token now; it is not shown again:", "请立即复制该令牌，它不会再次显示："},
	"created":               {"Created", "创建时间"},
	"runners.title":         {"Runners", "执行节点"},
	"runners.drain":         {"Drain", "排空"},
	"runners.undrain":       {"Resume", "恢复"},
	"runners.allowed":       {"Token allows", "令牌允许"},
	"runners.any":           {"any (the server's own runner)", "不限（服务器内置执行节点）"},
	"runners.spares":        {"Warm spares", "预热内核"},
	"runners.spares_help":   {"pre-started kernels ready / kept, and the memory the ready ones hold", "已就绪 / 保留的预启动内核数，以及就绪内核占用的内存"},
	"actions":               {"Actions", "操作"},
	"nav.regrades":          {"Regrades", "重新评分"},
	"rg.title":              {"Staged regrade", "分阶段重新评分"},
	"rg.mode":               {"Mode", "方式"},
	"rg.all":                {"every graded submission (not only older versions)", "所有已评分提交（不只是旧版本）"},
	"rg.stage":              {"Stage a regrade", "暂存重新评分"},
	"rg.help":               {"recompare compares the stored outputs with the current references; reexecute runs the notebooks again, failed submissions included. Nothing changes until you apply.", "recompare 用当前参考输出重新比较已存输出；reexecute 重新运行笔记本，包括评分失败的提交。应用之前不会改变任何分数。"},
	"rg.old":                {"Old score", "原分数"},
	"rg.new":                {"New score", "新分数"},
	"rg.change":             {"Change", "变化"},
	"rg.none":               {"No submission is affected.", "没有受影响的提交。"},
	"rg.apply":              {"Apply the new scores", "应用新分数"},
	"rg.discard":            {"Discard", "放弃"},
	"rg.pending":            {"Re-executions are still running; reload to see them finish.", "重新运行尚未完成，请稍后刷新。"},
	"rg.another":            {"Stage another regrade", "暂存另一次重新评分"},
	"rg.no_score":           {"failed, no score", "评分失败，无分数"},
	"rg.skipped_failed":     {"Failed submissions left out (a recompare cannot score them; stage a reexecute regrade to grade them):", "未包含的评分失败提交（recompare 无法为其评分；请暂存 reexecute 重新评分）："},
	"p50":                   {"median", "中位数"},
	"p90":                   {"90th percentile", "90 分位"},
	"p99":                   {"99th percentile", "99 分位"},
	"max":                   {"maximum", "最大值"},
	"feedback.cell":         {"Question", "题目"},
	"sub.own_notebook":      {"Download your executed notebook", "下载你执行后的笔记本"},
	"sub.feedback_nb":       {"Download the feedback notebook (your notebook with the feedback after each question)", "下载反馈笔记本（你的笔记本，每道题后附反馈）"},
	"ex.deadline":           {"Deadline", "截止时间"},
	"ex.no_deadline":        {"No deadline", "无截止时间"},
	"ex.late":               {"Late penalty", "迟交扣分"},
	"ex.late_step":          {"more than %s late: score × %s", "迟交超过 %s：分数 × %s"},
	"ex.no_late":            {"Submissions after the deadline are not accepted for points.", "截止后提交不计分。"},
	"ex.attempts":           {"Attempts", "提交次数"},
	"ex.unlimited":          {"no limit", "不限"},
	"time.local":            {"times in your time zone", "时间为你所在时区"},
	"nav.audit":             {"Audit log", "审计日志"},
	"cohort.pick":           {"Cohort", "课程班次"},
	"cohort.all":            {"All my cohorts", "我的全部班次"},
	"cohort.show":           {"Show", "切换"},
	"audit.title":           {"Audit log", "审计日志"},
	"audit.when":            {"When", "时间"},
	"audit.actor":           {"Who", "操作者"},
	"audit.action":          {"Action", "操作"},
	"audit.subject":         {"Subject", "对象"},
	"audit.detail":          {"Detail", "详情"},
	"audit.none":            {"Nothing recorded yet.", "尚无记录。"},
	"audit.login":           {"signed in", "登录"},
	"audit.login-failed":    {"sign-in refused", "登录被拒绝"},
	"audit.user-created":    {"user created", "创建用户"},
	"audit.token-created":   {"token created", "创建令牌"},
	"audit.token-revoked":   {"token revoked", "吊销令牌"},
	"audit.tokens-revoked":  {"all tokens revoked", "吊销全部令牌"},
	"audit.regrade-applied": {"regrade applied", "应用重新评分"},
	"audit.runner-drain":    {"runner drained", "排空执行节点"},
	"audit.runner-resume":   {"runner resumed", "恢复执行节点"},
	"dash.unserved":         {"No runner online can grade these exercises: their submissions stay queued until one registers.", "当前没有在线的执行节点能评分以下练习：其提交将排队，直到有满足条件的执行节点注册。"},
	"dash.queue24":          {"Submissions waiting for a runner, last 24 hours (hourly, UTC)", "等待执行节点的提交（近 24 小时，每小时，UTC）"},
	"dash.queue_now":        {"Now", "当前"},
	"job.queued":            {"waiting", "等待中"},
	"job.leased":            {"running", "运行中"},
	"axis.day":              {"day (UTC, month-day)", "日期（UTC，月-日）"},
	"axis.hour":             {"hour (UTC)", "时刻（UTC）"},
	"axis.submissions":      {"submissions", "提交数"},
	"axis.waiting":          {"submissions waiting", "等待中的提交"},
	"axis.score_pct":        {"counted score (% of the maximum)", "计分（占满分的百分比）"},
	"axis.learners":         {"learners", "学员数"},
	"axis.pass_pct":         {"graded attempts that pass the question (%), hardest first", "通过该题的已评分提交（%），最难的在前"},
	// Rosters and sections.
	"roster.title":          {"Import a roster", "导入名单"},
	"roster.file":           {"Roster (CSV)", "名单（CSV）"},
	"roster.help":           {"A CSV with a header row: name, email or student_number, section, role (learner, instructor or admin; empty is learner). The student number (else the email) is the login name, so importing again updates people instead of duplicating them. Every bad row is listed and then nothing is imported. The new users' tokens download once as CSV; they are not stored and cannot be shown again.", "CSV 文件，首行为表头：name、email 或 student_number、section、role（learner、instructor 或 admin，留空为 learner）。学号（无学号时为邮箱）作为登录名，重复导入只会更新而不会重复创建。所有有误的行会一次列出，此时不导入任何内容。新用户的令牌以 CSV 形式仅下载一次，服务器不保存，之后无法再次显示。"},
	"roster.import":         {"Import", "导入"},
	"roster.choose":         {"Choose a roster file (.csv).", "请选择名单文件（.csv）。"},
	"roster.too_large":      {"The roster is too large (at most 4 MiB).", "名单文件过大（最大 4 MiB）。"},
	"roster.failed":         {"The roster was not imported:", "名单未导入："},
	"roster.done":           {"Roster imported (created / updated / unchanged):", "名单已导入（新建 / 更新 / 未变）："},
	"section":               {"Section", "班级"},
	"section.all":           {"All sections", "全部班级"},
	"audit.roster-imported": {"roster imported", "导入名单"},
	"audit.user-updated":    {"user updated", "更新用户"},
	// Similarity report.
	"sim.title":               {"Similarity", "相似度"},
	"sim.advisory":            {"Advisory only: similar code is a reason to talk to the learners, not proof of copying, and it never changes a score. Each learner's latest submission is compared on its solution cells, as normalized Python tokens (names, numbers and strings do not matter), by winnowed fingerprints as MOSS does; code of the starter notebook and idioms most of the class share are ignored.", "仅供参考：代码相似只是与学员沟通的理由，并不证明抄袭，也不会改变任何分数。比较每位学员最新一次提交的解答单元格，代码先归一化为 Python 记号（变量名、数字和字符串不计），再按 MOSS 的 winnowing 指纹比较；起始笔记本中的代码和大多数学员共有的惯用写法不计入。"},
	"sim.submissions":         {"Submissions compared", "参与比较的提交"},
	"sim.median":              {"Median score of pairs with any match", "有任何匹配的配对的中位得分"},
	"sim.pairs":               {"Unusually similar pairs", "异常相似的配对"},
	"sim.none":                {"No pair is unusually similar.", "没有异常相似的配对。"},
	"sim.score":               {"Similarity", "相似度"},
	"sim.shared":              {"Shared fingerprints", "共同指纹"},
	"sim.lines":               {"lines", "行"},
	"audit.similarity-report": {"similarity report read", "查看相似度报告"},
	// Extensions.
	"ext.title":               {"Extensions", "延期"},
	"ext.grant":               {"Grant an extension", "批准延期"},
	"ext.deadline":            {"New deadline", "新截止时间"},
	"ext.late":                {"Late penalty after it", "其后的迟交扣分"},
	"ext.help":                {"The learner's own deadline for this exercise, in your time zone; the exercise is not changed. The late penalty after it: the exercise's schedule, none, or your own steps (after so many hours late the score is multiplied by 0–1). Granting or revoking rescores the learner's graded submissions at once.", "仅对该学员生效的截止时间（按你所在的时区），练习本身不变。其后的迟交扣分：沿用练习的规则、不扣分，或自定规则（迟交超过若干小时后分数乘以 0–1 的系数）。批准或撤销后立即按新规则重新计算该学员已评分提交的分数。"},
	"ext.pick_learner":        {"login or name", "登录名或姓名"},
	"ext.own_steps":           {"these steps:", "按以下规则："},
	"ext.after_hours":         {"Hours late", "迟交小时数"},
	"ext.multiplier":          {"Score multiplied by", "分数乘以"},
	"ext.bad_mode":            {"late penalty: unknown choice %q", "迟交扣分：未知选项 %q"},
	"ext.bad_hours":           {"late penalty, step %d: hours late %q is not a number of hours from 0", "迟交扣分第 %d 步：迟交小时数 %q 不是不小于 0 的数字"},
	"ext.bad_mult":            {"late penalty, step %d: %q is not a number", "迟交扣分第 %d 步：%q 不是数字"},
	"ext.no_steps":            {"late penalty: fill in at least one step, or choose the exercise's schedule or none", "迟交扣分：请至少填写一步，或选择沿用练习规则或不扣分"},
	"ext.list":                {"Extensions of this exercise", "本练习的延期"},
	"ext.granted":             {"Granted", "批准"},
	"ext.revoke":              {"Revoke", "撤销"},
	"ext.revoked_by":          {"revoked by", "撤销人"},
	"ext.none":                {"No extension yet.", "尚无延期。"},
	"ext.same_late":           {"as the exercise", "同练习设置"},
	"ext.no_penalty":          {"no penalty", "不扣分"},
	"ext.invalid":             {"The extension was not granted:", "未能批准延期："},
	"ext.done.granted":        {"The extension is granted.", "已批准延期。"},
	"ext.done.revoked":        {"The extension is revoked.", "已撤销延期。"},
	"gb.extended":             {"extension to", "延期至"},
	"gb.pending":              {"manual grading pending", "待人工评分"},
	"gb.pending_title":        {"the automatic part's points; a manual question still waits for a person", "仅含自动评分部分；尚有人工评分题未评"},
	"gb.pending_other":        {"another submission awaits manual grading", "另有提交待人工评分"},
	"gb.pending_other_title":  {"the best score counts: once a person grades it, that submission may become the counted one", "按最高分计分：人工评分后，该提交可能成为计分成绩"},
	"ex.pending":              {"waiting for manual grading (automatic points only)", "人待人工评分（仅计自动评分部分）"},
	"ext.yours":               {"extended for you; the exercise's deadline is", "已为你延期；练习原截止时间为"},
	"audit.extension-granted": {"extension granted", "批准延期"},
	"audit.extension-revoked": {"extension revoked", "撤销延期"},
	"rg.past":                 {"Past regrades", "历次重新评分"},
	"rg.items":                {"Submissions", "提交数"},
	"rg.decided":              {"Decided", "决定时间"},
	"rg.none_yet":             {"No regrade yet.", "尚无重新评分。"},
	"rg.state":                {"State", "状态"},
	"rg.raised":               {"raised", "提高"},
	"rg.lowered":              {"lowered", "降低"},
	"rg.mode.recompare":       {"compare again", "重新比较"},
	"rg.mode.reexecute":       {"run again", "重新运行"},
	"rg.state.staged":         {"staged", "计算中"},
	"rg.state.ready":          {"ready to apply", "可应用"},
	"rg.state.applied":        {"applied", "已应用"},
	"rg.state.discarded":      {"discarded", "已放弃"},
	"rg.item.pending":         {"pending", "等待中"},
	"rg.item.done":            {"done", "完成"},
	"rg.item.failed":          {"failed", "失败"},
	// Staged references (c14): outputs recorded by runners, reviewed before grading uses them.
	"nav.references":           {"References", "参考输出"},
	"ref.title":                {"References recorded by runners", "执行节点录制的参考输出"},
	"ref.help":                 {"A runner's recording is not used for grading until you accept it. Compare it with the reference used now; accept it only if the outputs are what the answer prints.", "执行节点录制的参考输出在您接受之前不会用于评分。请与当前使用的参考输出比较，仅在输出确为参考答案的输出时接受。"},
	"ref.waiting":              {"Waiting for review", "待审核"},
	"ref.decided":              {"Decided", "已处理"},
	"ref.none":                 {"None.", "无。"},
	"ref.cells":                {"Cells", "单元格数"},
	"ref.cell":                 {"Cell", "单元格"},
	"ref.recorded":             {"Recorded", "录制时间"},
	"ref.against":              {"Compared with", "比较对象"},
	"ref.against.file":         {"the committed reference file (grading keeps using it even after an accept)", "已提交的参考文件（接受后评分仍使用该文件）"},
	"ref.against.database":     {"the reference accepted before", "此前接受的参考输出"},
	"ref.against.none":         {"nothing: no reference yet", "无：尚无参考输出"},
	"ref.answer":               {"Answer", "参考答案"},
	"ref.stale":                {"recorded from another version of the answer: record it again", "录制自另一版本的参考答案：请重新录制"},
	"ref.change":               {"Change", "变化"},
	"ref.change.same":          {"same", "相同"},
	"ref.change.changed":       {"changed", "有变化"},
	"ref.change.added":         {"new", "新增"},
	"ref.change.removed":       {"removed", "已删除"},
	"ref.diff":                 {"Outputs (diff against the previous reference)", "输出（与此前参考输出的差异）"},
	"ref.note":                 {"Note", "备注"},
	"ref.accept":               {"Accept for grading", "接受并用于评分"},
	"ref.reject":               {"Reject", "拒绝"},
	"ref.back":                 {"All recorded references", "全部录制的参考输出"},
	"ref.state.staged":         {"waiting for review", "待审核"},
	"ref.state.accepted":       {"accepted", "已接受"},
	"audit.reference-accepted": {"reference accepted", "接受参考输出"},
	"audit.reference-rejected": {"reference rejected", "拒绝参考输出"},
	"ref.state.rejected":       {"rejected", "已拒绝"},
	// Verdicts of graded cells, as the badges show them.
	"v.pass":              {"pass", "通过"},
	"v.mismatch":          {"mismatch", "输出不符"},
	"v.error":             {"error", "出错"},
	"v.timeout":           {"timeout", "超时"},
	"v.not-run":           {"not run", "未运行"},
	"v.missing":           {"missing", "缺失"},
	"v.tampered":          {"tampered", "被篡改"},
	"v.incomplete-output": {"incomplete output", "输出不完整"},
	"v.memory-limit":      {"memory limit", "超出内存"},
	"v.needs-manual":      {"awaiting manual grading", "待人工评分"},
	"v.manual":            {"graded by hand", "人工评分"},
	// Manual grading.
	"mg.title":           {"Manual grading", "人工评分"},
	"mg.waiting":         {"submissions wait for manual grading", "份提交待人工评分"},
	"mg.mode":            {"Grading mode", "评分方式"},
	"mg.mode_question":   {"This question for everyone", "逐人批改本题"},
	"mg.mode_submission": {"Every question of this submission", "批改本提交的所有题"},
	"mg.questions":       {"Manual questions", "人工评分题"},
	"mg.empty":           {"No submission has been scored yet.", "还没有已评分的提交。"},
	"mg.saved":           {"Saved.", "已保存。"},
	"mg.position":        {"Position", "序号"},
	"mg.graded_by":       {"Graded by", "评分人"},
	"mg.answer":          {"The learner's answer", "学员的作答"},
	"mg.rubric":          {"Rubric", "评分细则"},
	"mg.adjustment":      {"Adjustment (points, + or −)", "调整分（可正可负）"},
	"mg.comment":         {"Comment for the learner", "给学员的评语"},
	"mg.save":            {"Save", "保存"},
	"mg.save_next":       {"Save and next", "保存并下一份"},
	"mg.pager":           {"Previous and next", "上一份与下一份"},
	"mg.prev":            {"Previous", "上一份"},
	"mg.next":            {"Next", "下一份"},
	"mg.grade":           {"Grade by hand", "人工评分"},
	"mg.invalid":         {"The grade was not saved; please correct:", "评分未保存，请修改："},
	// Feedback release and regrade requests.
	"fr.title":      {"Feedback release", "发布反馈"},
	"fr.policy":     {"Feedback policy", "反馈策略"},
	"fr.done":       {"Released.", "已发布。"},
	"fr.everyone":   {"everyone", "全体学员"},
	"fr.learner":    {"Learner (empty: everyone)", "学员（留空：全体）"},
	"fr.release":    {"Release feedback", "发布反馈"},
	"rq.title":      {"Regrade requests", "复核申请"},
	"nav.requests":  {"Regrade requests", "复核申请"},
	"rq.filter":     {"Which requests", "显示哪些申请"},
	"rq.open":       {"open", "待处理"},
	"rq.answered":   {"answered", "已答复"},
	"rq.all":        {"all", "全部"},
	"rq.empty":      {"No regrade requests.", "没有复核申请。"},
	"rq.answer":     {"Answer", "答复"},
	"rq.points":     {"New points for this question (optional)", "本题新分数（可选）"},
	"rq.reason":     {"Reason for the new points", "改分理由"},
	"rq.send":       {"Send answer", "发送答复"},
	"rq.overridden": {"Points of this question set to", "本题分数已改为"},
	"rq.message":    {"What should be looked at again, and why", "需要复核的内容及理由"},
	"rq.ask":        {"Ask for a regrade", "申请复核"},
	"rq.invalid":    {"The answer was not sent; please correct:", "答复未发送，请修改："},
	"rq.not_asked":  {"The request was not sent:", "复核申请未提交："},
	// Roles.
	"role.learner":    {"learner", "学员"},
	"role.instructor": {"instructor", "教师"},
	"role.admin":      {"admin", "管理员"},
	"role.runner":     {"runner", "执行节点"},
	// Problem titles on pages (the HTTP status texts).
	"pt.400": {"Bad request", "请求有误"},
	"pt.403": {"Forbidden", "禁止访问"},
	"pt.404": {"Not found", "未找到"},
	"pt.409": {"Conflict", "冲突"},
	"pt.413": {"Too large", "文件过大"},
	"pt.422": {"Not valid", "内容无效"},
	"pt.429": {"Too many requests", "请求过于频繁"},
	"pt.500": {"Something went wrong", "出错了"},
	"pt.503": {"Temporarily unavailable", "暂时不可用"},
	"pt.507": {"Out of storage", "存储空间不足"},

	// LTI 1.3 launches, Deep Linking and the platforms page (lti.go).
	"nav.lti":                 {"LMS (LTI)", "LMS（LTI）"},
	"lti.admin.title":         {"LMS platforms (LTI 1.3)", "LMS 平台（LTI 1.3）"},
	"lti.admin.values":        {"npugrade's values to paste in the LMS", "在 LMS 中填写的 npugrade 参数"},
	"lti.admin.tool_url":      {"Tool URL / target link URI", "工具 URL / 目标链接 URI"},
	"lti.admin.login_url":     {"Initiate login URL", "登录发起 URL"},
	"lti.admin.redirect":      {"Redirection URI(s)", "重定向 URI"},
	"lti.admin.jwks":          {"Public keyset URL", "公钥集 URL"},
	"lti.admin.custom":        {"Custom parameter of a link made by hand", "手动添加链接时的自定义参数"},
	"lti.admin.add":           {"Register a platform", "登记平台"},
	"lti.admin.name":          {"Name", "名称"},
	"lti.admin.issuer":        {"Issuer (platform id)", "签发者（平台 ID）"},
	"lti.admin.client":        {"Client id", "客户端 ID"},
	"lti.admin.deployments":   {"Deployment ids (comma-separated)", "部署 ID（逗号分隔）"},
	"lti.admin.auth":          {"Authentication request URL", "认证请求 URL"},
	"lti.admin.token":         {"Access token URL", "访问令牌 URL"},
	"lti.admin.platform_jwks": {"Platform's public keyset URL", "平台公钥集 URL"},
	"lti.admin.audience":      {"Token audience, when not the token URL (Canvas)", "令牌受众（与令牌 URL 不同时填写，如 Canvas）"},
	"lti.admin.help":          {"The LMS shows these values when npugrade is added as an LTI 1.3 tool; see docs/lti.md.", "在 LMS 中将 npugrade 添加为 LTI 1.3 工具后，LMS 会显示这些值；详见 docs/lti.md。"},
	"lti.admin.register":      {"Register", "登记"},
	"lti.admin.added":         {"Registered:", "已登记："},
	"lti.admin.restart":       {"The LTI tool is not served yet: restart npugrade serve with --public-url after registering the first platform.", "LTI 工具尚未启用：登记第一个平台后，请使用 --public-url 重启 npugrade serve。"},
	"lti.refused":             {"The course could not open npugrade", "无法从课程打开 npugrade"},
	"lti.why.state":           {"This launch expired, was already used or did not start here. Open the activity again from the course.", "此次启动已过期、已被使用或并非由本站发起。请从课程中重新打开该活动。"},
	"lti.why.signature":       {"The course's message is not signed by the registered platform.", "课程平台发来的消息签名与已登记的平台不符。"},
	"lti.why.nonce":           {"This launch was already used; a launch is accepted once. Open the activity again from the course.", "此次启动已被使用过，每次启动只接受一次。请从课程中重新打开该活动。"},
	"lti.why.deployment":      {"This deployment of npugrade is not registered for the platform. Ask the npugrade administrator to add its deployment id.", "该平台上的此部署未在 npugrade 登记。请让 npugrade 管理员添加其部署 ID。"},
	"lti.why.expired":         {"The course's message has expired (or the clocks disagree). Open the activity again.", "课程平台的消息已过期（或双方时钟不一致）。请重新打开该活动。"},
	"lti.why.audience":        {"The course's message is meant for another tool (wrong client id).", "课程平台的消息是发给另一个工具的（客户端 ID 不符）。"},
	"lti.why.issuer":          {"The course's message comes from another platform than the one it started at.", "课程平台的消息来自与发起时不同的平台。"},
	"lti.why.version":         {"The platform speaks another LTI version; npugrade takes LTI 1.3.", "该平台使用其他 LTI 版本；npugrade 只支持 LTI 1.3。"},
	"lti.why.message":         {"npugrade does not take this kind of LTI message.", "npugrade 不接受此类 LTI 消息。"},
	"lti.why.claims":          {"The course's message lacks what npugrade needs (user, course or link).", "课程平台的消息缺少 npugrade 所需的信息（用户、课程或链接）。"},
	"lti.why.unlinked":        {"This course is not set up in npugrade yet: its instructor must open npugrade from it first.", "该课程尚未在 npugrade 中设置：需要课程教师先从课程中打开一次 npugrade。"},
	"lti.why.platform":        {"This platform is not registered in npugrade, or refused the sign-in.", "该平台未在 npugrade 登记，或拒绝了登录。"},
	"lti.why.unavailable":     {"The course's platform cannot be reached now; open the activity again in a minute.", "暂时无法连接课程平台；请稍后重新打开该活动。"},
	"lti.why.https":           {"npugrade takes LTI launches over https only.", "npugrade 只接受通过 https 的 LTI 启动。"},
	"lti.why.role":            {"Only the course's instructors may do this.", "只有课程教师可以执行此操作。"},
	"lti.dl.title":            {"Place exercises in the course", "将练习添加到课程"},
	"lti.dl.help":             {"Pick the exercises to place in the course; each gets a column in its gradebook.", "选择要添加到课程的练习；每个练习会在课程成绩册中占一列。"},
	"lti.dl.submit":           {"Place in the course", "添加到课程"},
	"lti.dl.sending":          {"Returning to the course…", "正在返回课程…"},
	"lti.dl.continue":         {"Continue", "继续"},

	// Values the pages used to show raw (layout and language pass).
	"policy.best":              {"best score", "最高分"},
	"policy.latest":            {"latest score", "最近一次成绩"},
	"fbpolicy.immediate":       {"shown at once", "立即显示"},
	"fbpolicy.after_due_date":  {"shown after the due date", "截止后显示"},
	"fbpolicy.on_release":      {"shown once released", "发布后显示"},
	"audit.cohort.create":      {"cohort created", "创建班次"},
	"audit.cohort.member":      {"cohort member added", "添加班次成员"},
	"audit.cohort.remove":      {"cohort member removed", "移除班次成员"},
	"audit.cohort.offer":       {"exercise offered to a cohort", "向班次开放练习"},
	"audit.device-sign-in":     {"device signed in", "设备登录"},
	"audit.manual-grade":       {"graded by hand", "人工评分"},
	"audit.rubric-changed":     {"rubric changed", "修改评分细则"},
	"audit.feedback-released":  {"feedback released", "发布反馈"},
	"audit.regrade-requested":  {"regrade requested", "申请复核"},
	"audit.regrade-answered":   {"regrade request answered", "答复复核申请"},
	"audit.score-override":     {"points set by hand", "人工改分"},
	"audit.lti-platform-added": {"LMS platform registered", "登记 LMS 平台"},
	"audit.lti-key-rotated":    {"LTI key rotated", "轮换 LTI 密钥"},
}

// verdicts lists every cell verdict; each has a "v." message.
var verdicts = []string{domain.VerdictPass, domain.VerdictMismatch, domain.VerdictError, domain.VerdictTimeout,
	domain.VerdictNotRun, domain.VerdictMissing, domain.VerdictTampered, domain.VerdictIncompleteOutput,
	domain.VerdictMemoryLimit, domain.VerdictNeedsManual, domain.VerdictManual}

// Counted phrases follow each language's plural rules (CLDR, through
// golang.org/x/text): English "1 question" / "10 questions", Chinese has
// one form.
var pluralKeys = map[string][2]catalog.Message{ // key: {en, zh-CN}
	"n.questions":     {cldr.Selectf(1, "%d", "=1", "%d question", "other", "%d questions"), catalog.String("%d 道题")},
	"n.attempts_left": {cldr.Selectf(1, "%d", "=1", "%d attempt left", "other", "%d attempts left"), catalog.String("还可提交 %d 次")},
	"n.attempts_used": {cldr.Selectf(1, "%d", "=1", "%d attempt used", "other", "%d attempts used"), catalog.String("已提交 %d 次")},
	"n.learners":      {cldr.Selectf(1, "%d", "=1", "%d learner", "other", "%d learners"), catalog.String("%d 名学员")},
	"n.submissions":   {cldr.Selectf(1, "%d", "=1", "%d submission", "other", "%d submissions"), catalog.String("%d 份提交")},
	"n.days":          {cldr.Selectf(1, "%d", "=1", "%d day", "other", "%d days"), catalog.String("%d 天")},
	"n.hours":         {cldr.Selectf(1, "%d", "=1", "%d hour", "other", "%d hours"), catalog.String("%d 小时")},
	"n.minutes":       {cldr.Selectf(1, "%d", "=1", "%d minute", "other", "%d minutes"), catalog.String("%d 分钟")},
	"n.seconds":       {cldr.Selectf(1, "%d", "=1", "%d second", "other", "%d seconds"), catalog.String("%d 秒")},
	"n.jobs":          {cldr.Selectf(1, "%d", "=1", "%d job", "other", "%d jobs"), catalog.String("%d 个任务")},
	"n.changed":       {cldr.Selectf(1, "%d", "=1", "%d score changes", "other", "%d scores change"), catalog.String("%d 份分数变化")},
	"n.unchanged":     {cldr.Selectf(1, "%d", "=1", "%d unchanged", "other", "%d unchanged"), catalog.String("%d 份不变")},
	"n.waiting_manual": {cldr.Selectf(1, "%d", "=1", "%d submission waits for manual grading", "other", "%d submissions wait for manual grading"),
		catalog.String("%d 份提交待人工评分")},
}

// Printers are a message printer per language (en, zh-CN) for counted
// phrases: keys map to their {en, zh-CN} messages. The command line
// builds its own from its phrases.
func Printers(keys map[string][2]catalog.Message) map[string]*message.Printer {
	b := catalog.NewBuilder(catalog.Fallback(language.English))
	for key, m := range keys {
		if err := b.Set(language.English, key, m[0]); err != nil {
			panic(err)
		}
		if err := b.Set(language.SimplifiedChinese, key, m[1]); err != nil {
			panic(err)
		}
	}
	return map[string]*message.Printer{
		langEN: message.NewPrinter(language.English, message.Catalog(b)),
		langZH: message.NewPrinter(language.SimplifiedChinese, message.Catalog(b)),
	}
}

var printers = Printers(pluralKeys)

// plural writes the counted phrase key for n in lang.
func plural(lang, key string, n int) string {
	if _, ok := pluralKeys[key]; !ok {
		return "‹" + key + "›"
	}
	p, ok := printers[lang]
	if !ok {
		p = printers[langEN]
	}
	return p.Sprintf(key, n)
}

// StatusName and VerdictName are a submission status and a cell verdict
// in lang (en, zh-CN) as the pages say them, for the command line to say
// the same; an unknown one is returned as it is.
func StatusName(lang, status string) string { return known(lang, "st."+status, status) }

// VerdictName: see StatusName.
func VerdictName(lang, verdict string) string { return known(lang, "v."+verdict, verdict) }

func known(lang, key, otherwise string) string {
	if _, ok := messages[key]; !ok {
		return otherwise
	}
	return translate(lang, key)
}

// translate returns key's message in lang.
func translate(lang, key string) string {
	m, ok := messages[key]
	if !ok {
		return "‹" + key + "›"
	}
	if lang == langZH && m[1] != "" {
		return m[1]
	}
	return m[0]
}
