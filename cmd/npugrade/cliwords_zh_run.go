package main

import "regexp"

// zhRunWords are the Chinese of what serve, runner and check print for
// the person at the terminal as they start (their structured log lines
// stay English, for log pipelines), and of the check report and the
// importer's notes; merged into zhWords.
var zhRunWords = map[string]string{
	// Isolation, output limits and grading environments (serve, runner, check).
	"NPUGRADE_SANDBOX=%q: want %s or %s": "NPUGRADE_SANDBOX=%q：应为 %s 或 %s",
	"--memory-limit: %s":                 "--memory-limit：%s",
	"--file-size-limit: %s":              "--file-size-limit：%s",
	"--disk-limit: %s":                   "--disk-limit：%s",
	"--cell-output-limit: %s":            "--cell-output-limit：%s",
	"--notebook-output-limit: %s":        "--notebook-output-limit：%s",
	"--env %s needs the sandbox: --sandbox=none runs kernels on the host (use --env host)":                  "--env %s 需要沙箱：--sandbox=none 会在主机上运行内核（请改用 --env host）",
	"WARNING: --sandbox=none: learner code runs unisolated with this process's rights":                      "警告：--sandbox=none：学员代码将不经隔离、以本进程的权限运行",
	"this host cannot sandbox learner code (%s); fix that, or pass --sandbox=none on a development machine": "这台主机无法用沙箱隔离学员代码（%s）；请修复，或在开发机上使用 --sandbox=none",
	"WARNING: removing sandboxes left by dead runners:":                                                     "警告：清理已退出评分机遗留的沙箱时出错：",
	"removed %d sandboxes left by runners that died":                                                        "已清理已退出评分机遗留的 %d 个沙箱",
	"--notebook-output-limit %s: at most 48MiB (the server accepts executed notebooks of up to 64MiB)":      "--notebook-output-limit %s：最多 48MiB（服务器接受的已执行笔记本最大 64MiB）",
	"--interrupt-grace %s: must be positive":                                                                "--interrupt-grace %s：必须大于 0",
	"WARNING: removing job directories left by dead runners:":                                               "警告：清理已退出评分机遗留的作业目录时出错：",
	"removed %d job directories left by runners that died":                                                  "已清理已退出评分机遗留的 %d 个作业目录",
	"profile %s: kernels run on the host's own Python (--env host), not in a grading environment":           "配置 %s：内核在主机自带的 Python 中运行（--env host），不在评分环境中",
	"--env: %s": "--env：%s",
	"profile %s: kernels run in the grading environment %s (%s)": "配置 %s：内核在评分环境 %s 中运行（%s）",
	"empty":                       "为空",
	"missing number":              "缺少数字",
	"must be positive":            "必须大于 0",
	"too large":                   "过大",
	"must be at least 1 byte":     "至少 1 字节",
	"no such grading environment": "没有这个评分环境",

	// serve.
	"--jupyterhub-url %q: want http(s)://HOST[:PORT]": "--jupyterhub-url %q：应为 http(s)://HOST[:PORT]",
	"--oidc-issuer %q: want http(s)://HOST[/PATH]":    "--oidc-issuer %q：应为 http(s)://HOST[/PATH]",
	"--oidc-issuer needs --oidc-client-id":            "--oidc-issuer 需要同时给出 --oidc-client-id",
	"--trusted-proxies: %s":                           "--trusted-proxies：%s",
	"--public-url: want http(s)://host[:port][/path]": "--public-url：应为 http(s)://host[:port][/path]",
	"cannot listen on %s: %s":                         "无法监听 %s：%s",
	"--upload-limit: %s":                              "--upload-limit：%s",
	"load exercises: %s":                              "无法加载练习：%s",
	"--metrics-addr: %s":                              "--metrics-addr：%s",
	"the local runner cannot execute notebooks: %s":   "进程内评分机无法执行笔记本：%s",
	"address already in use":                          "地址已被占用",
	"cannot assign requested address":                 "无法使用所请求的地址",
	"missing port in address":                         "地址中缺少端口",
	"too many colons in address":                      "地址中冒号过多",

	"npugrade serving on %s (database %s, %d exercises, %d local runner slots)\n": "npugrade 已在 %s 上服务（数据库 %s，%d 个练习，%d 个进程内评分槽位）\n",
	"admin token: %s\n": "管理员令牌：%s\n",
	"invalid port":      "端口无效",

	// runner.
	"the server refused to register this runner: %d %s: %s":                                                                    "服务器拒绝登记这台评分机：%d %s：%s",
	"%d NPU device nodes found, but the environment has the cpu profile (no usable torch_npu): kernels are not pinned to them": "找到 %d 个 NPU 设备节点，但环境是 cpu 配置（没有可用的 torch_npu）：内核不绑定到这些设备",
	"profile %s needs an NPU, but this runner was given none: %s; on Kubernetes the pod must request one (resources.limits huawei.com/Ascend910: 1, see docs/operations.md), elsewhere check --devices and --dev-root": "配置 %s 需要 NPU，但这台评分机没有分到：%s；在 Kubernetes 上 Pod 须申请一个（resources.limits huawei.com/Ascend910: 1，见 docs/operations.md），其他环境请检查 --devices 和 --dev-root",
	// The check report (internal/check): progress lines, table, findings
	// and the advice about reference outputs.
	"ok":                  "符合预期",
	"EXECUTION ERROR: %s": "执行出错：%s",
	"UNEXPECTED":          "不符合预期",
	"answer":              "参考答案",
	"starter":             "初始笔记本",
	"fixture":             "测试用例",
	"notebook":            "笔记本",
	"recorded reference outputs for profile %s (%d cells)": "已记录配置 %s 的参考输出（%d 个单元格）",
	"rerun %d/%d of the answer done":                       "参考答案第 %d/%d 次重复执行完成",
	"%s: the reference outputs of %s for profile %q were recorded from another version of the answer, and the answer's fresh outputs could not be had": "%s：%s 在配置 %q 下的参考输出是用另一版参考答案记录的，且无法得到参考答案的新输出",
	"no usable reference outputs: stale reference outputs":                       "没有可用的参考输出：参考输出已过期",
	"the answer got %s, want %s: %s":                                             "参考答案得到「%s」，应为「%s」：%s",
	"the untouched starter passes this cell; the question gives its points away": "未改动的初始笔记本就能通过这个单元格；这道题等于白送分",
	"got %s, want %s: %s":                                                        "得到「%s」，应为「%s」：%s",
	"the fixture scores %g, want %g":                                             "测试用例得 %g 分，应为 %g 分",
	"the fixture expects a verdict for %s, which is not a graded cell of %s":     "测试用例期望 %s 的结果，但它不是 %s 的评分单元格",
	"EXERCISE\tNOTEBOOK\tKIND\tSCORE\tCASES\tRESULT":                             "练习\t笔记本\t类型\t得分\t单元格数\t结果",
	"as expected":     "符合预期",
	"graded":          "已评分",
	"execution error": "执行出错",
	"%d unexpected":   "%d 处不符合预期",
	"observed:":       "实际输出：",
	"cells whose outputs change between runs (they need a sanitizer or a tolerance): %s": "多次执行间输出会变化的单元格（需要清洗规则或容差）：%s",
	"%d notebooks checked on profile %s in %.1fs":                                        "检查了 %d 个笔记本（配置 %s），用时 %.1f 秒",
	"(probe seed %d)": "（探测种子 %d）",
	"%s: recorded the answer's outputs as the reference outputs for profile %s.": "%s：已把参考答案的输出记录为配置 %s 的参考输出。",
	"%s: the reference outputs for profile %s were recorded from another version of the answer (they are stale); its notebooks above were graded against the answer's fresh outputs, which are not recorded.": "%s：配置 %s 的参考输出是用另一版参考答案记录的（已过期）；上面它的各笔记本按参考答案的新输出评分，新输出尚未记录。",
	"%s: the answer's fresh outputs for profile %s were checked before recording them.":                                                                                                                       "%s：记录前已检查参考答案在配置 %s 下的新输出。",
	"graded cells whose outputs changed: none": "输出有变化的评分单元格：无",
	"graded cells whose outputs changed: %s":   "输出有变化的评分单元格：%s",
	"%s (no longer graded)":                    "%s（已不再评分）",
	"the answer does not run as its reference must: %s\n  recording its outputs is not advised: fix the answer first.": "参考答案无法按参考输出的要求运行：%s\n  不建议记录它的输出：请先修复参考答案。",
	" and ": "和",
	"graded against the fresh outputs, %s now disagrees with its expectations:":                                                                                                     "按新输出评分，%s 与预期不符：",
	"graded against the fresh outputs, %s now disagree with their expectations:":                                                                                                    "按新输出评分，%s 与预期不符：",
	"NOT recorded: fix the answer, or, when the change is intended, update the fixtures' expected verdicts (.expected.json) and check again.":                                       "未记录：请修复参考答案；若这个变化是有意的，请更新测试用例的预期结果（.expected.json）后重新检查。",
	"recording them (--update-reference) is not advised: fix the answer, or, when the change is intended, update the fixtures' expected verdicts (.expected.json) and check again.": "不建议记录（--update-reference）：请修复参考答案；若这个变化是有意的，请更新测试用例的预期结果（.expected.json）后重新检查。",
	"the answer and every fixture grade as expected against them: review the changed cells, then record them with npugrade check --profile %s --only %s --update-reference":         "参考答案和所有测试用例按新输出评分均符合预期：请检查有变化的单元格，再用 npugrade check --profile %s --only %s --update-reference 记录",
	"fixture %s":      "测试用例 %s",
	"the answer":      "参考答案",
	"exercise %s: %s": "练习 %s：%s",
	"probe the environment the notebooks run in: %s": "无法探测笔记本运行的环境：%s",
	"the host's Python":          "主机自带的 Python",
	"the grading environment %s": "评分环境 %s",
	"refusing to check in %s (Python %s, torch %s), which does not satisfy what the exercises require:\n  %s\nbuild the environment they are written for with `%s` (then --env auto or --env cpu picks it), or check only the others with --only": "拒绝在%s（Python %s，torch %s）中检查，它不满足这些练习的要求：\n  %s\n请用 `%s` 构建这些练习所针对的环境（之后 --env auto 或 --env cpu 会选用它），或用 --only 只检查其他练习",

	// The importer's notes (internal/importer): what each cell became.
	"%s: manually graded task in nbgrader -> manual cell, %g points":                                                          "%s：nbgrader 中人工评分的任务 -> 人工评分单元格，%g 分",
	"%s: manually graded answer in nbgrader -> manual cell, %g points":                                                        "%s：nbgrader 中人工评分的答案 -> 人工评分单元格，%g 分",
	"%s: manually graded task in nbgrader with no points -> kept ungraded":                                                    "%s：nbgrader 中人工评分但没有分值的任务 -> 保持不评分",
	"%s: manually graded answer in nbgrader with no points -> kept ungraded":                                                  "%s：nbgrader 中人工评分但没有分值的答案 -> 保持不评分",
	"%s: nbgrader autograded answer -> solution cell":                                                                         "%s：nbgrader 自动评分的答案 -> 作答单元格",
	"passes when it raises nothing":                                                                                           "不抛出异常即通过",
	"passes when it raises nothing and writes nothing to stderr":                                                              "不抛出异常、也不向 stderr 输出即通过",
	"### AUTOTEST values compared with the answer's, asserts run":                                                             "### AUTOTEST 的值与参考答案的比较，断言照常执行",
	"%s; its hidden tests -> probe %s (run after every cell, never shown to learners; all or nothing with the visible tests)": "%s；其隐藏测试 -> 探测单元格 %s（在所有单元格之后运行，从不向学员显示；与可见测试全对才得分）",
	"%s: nbgrader autograder tests -> graded cell, %s":                                                                        "%s：nbgrader 自动评分测试 -> 评分单元格，%s",
	"%s: nbgrader locked cell":                                                                                                "%s：nbgrader 锁定单元格",
	"%s: solution region with outputs (nbval) -> solution cell graded on its outputs, exact, 1 point":                         "%s：带输出的作答区域（nbval）-> 按输出精确评分的作答单元格，1 分",
	"%s: solution region -> solution cell":                                                                                    "%s：作答区域 -> 作答单元格",
	"parameters: papermill parameters cell -> locked":                                                                         "parameters：papermill 参数单元格 -> 锁定",
	"%s: skipped -> compare skip, not run":                                                                                    "%s：已跳过 -> compare 设为 skip，不运行",
	"%s: raises an exception -> compare error":                                                                                "%s：抛出异常 -> compare 设为 error",
	"%s: output ignored -> compare ignore, not graded":                                                                        "%s：忽略输出 -> compare 设为 ignore，不评分",
	"%s: outputs checked (nbval) -> compare exact, 1 point":                                                                   "%s：检查输出（nbval）-> compare 设为 exact，1 分",
	"%s: quiz variable -> graded check cell printing it":                                                                      "%s：测验变量 -> 输出它的评分检查单元格",
	"ASSIGNMENT CONFIG: read, not applied (Otter's export, PDF and generate settings have no meaning here; requirements must be in the grading environment)": "ASSIGNMENT CONFIG：已读取，未应用（Otter 的导出、PDF 和生成设置在这里没有意义；依赖须装在评分环境中）",
	"%s: Otter manual question %s -> manual cell, %g points":                                                                                         "%s：Otter 人工评分题 %s -> 人工评分单元格，%g 分",
	"%s: Otter manual question %s -> manual cell, %g points (no points given: 1, Otter's default)":                                                   "%s：Otter 人工评分题 %s -> 人工评分单元格，%g 分（未给分值：按 Otter 的默认值 1 分）",
	"%s: Otter solution of %s -> solution cell, its starter as Otter's student notebook shows it":                                                    "%s：Otter 中 %s 的解答 -> 作答单元格，初始内容与 Otter 学生笔记本中的一致",
	"%s: Otter question without tests -> nothing graded automatically":                                                                               "%s：没有测试的 Otter 题目 -> 不自动评分",
	"%s: Otter tests -> %d public test cells and %d hidden (probe cells, never shown), %g points in all, compared exactly with the answer's outputs": "%s：Otter 测试 -> %d 个公开测试单元格和 %d 个隐藏测试（探测单元格，从不显示），共 %g 分，与参考答案的输出精确比较",
	"%s: the cell that prints the answer file is dropped":                                                                                            "%s：输出答案文件的单元格已删除",
	"%s: no reference code in the lab answer notebook; its 参考思路 is the reference":                                                                    "%s：实验答案笔记本中没有参考代码；以其「参考思路」为参考",
	"%s: lab task -> solution cell on an NPU, graded by hand: %g points, a rubric item per step (%d)":                                                "%s：实验题 -> 在 NPU 上运行的作答单元格，人工评分：%g 分，每步一条评分细则（共 %d 条）",
	"%s: %s, answer %s, %g points -> solution cell and graded check cell":                                                                            "%s：%s，答案 %s，%g 分 -> 作答单元格和评分检查单元格",
}

// runErrors word the errors of other packages (sizes, proxies, grading
// environments, the runner protocol) that serve and runner show, for
// flagProblem.
var runErrors = []struct {
	re *regexp.Regexp
	zh string
}{
	{regexp.MustCompile(`^parse size (".*"): (".*") is not a number \(want e\.g\. (.*)\)$`), "无法解析大小 %s：%s 不是数字（应如 %s）"},
	{regexp.MustCompile(`^parse size (".*"): (.*)$`), "无法解析大小 %s：%s"},
	{regexp.MustCompile(`^(--gc-percent|--gc-memory-limit): (.*)$`), "%s：%s"},
	{regexp.MustCompile(`^(".*") is not a percentage of at least 1 or off$`), "%s 不是不小于 1 的百分数，也不是 off"},
	{regexp.MustCompile(`^(".*") is not a positive size in bytes \(units (.*)\) or off$`), "%s 不是正的字节数（单位 %s），也不是 off"},
	{regexp.MustCompile(`^not a CIDR or an address: (.*)$`), "不是 CIDR 或地址：%s"},
	{regexp.MustCompile(`^(".*"): want COUNT/DURATION such as 30/10m, or 0$`), "%s：应为 COUNT/DURATION（如 30/10m）或 0"},
	{regexp.MustCompile(`^--env (".*"): (.*)$`), "--env %s：%s"},
	{regexp.MustCompile(`^--env: (.*)$`), "--env：%s"},
	{regexp.MustCompile(`^(".*") is not PROFILE=NAME$`), "%s 不是 PROFILE=NAME"},
	{regexp.MustCompile(`^environment name (".*"): want lower-case letters, digits, '\.', '_' or '-' \(not (".*")\)$`), "环境名 %s 无效：只能用小写字母、数字、“.”、“_”或“-”（且不能是 %s）"},
	{regexp.MustCompile(`^environment (".*") in (\S+): (.*) \(build it with (.*), or import one with (.*)\)$`), "%[2]s 中没有评分环境 %[1]s：%[3]s（请用 %[4]s 构建，或用 %[5]s 导入）"},
	{regexp.MustCompile(`^seed (-?\d+) is not in (\S+)'s probe seed pool (\[.*\]): its references have no probe outputs for it$`), "种子 %s 不在 %s 的探测种子池 %s 中：其参考输出没有这个种子的探测输出"},
	{regexp.MustCompile(`^grading a learner's notebook needs the one exercise it is for \(--only\), not (\d+)$`), "给学员笔记本评分需要用 --only 指定它所属的那一个练习，而不是 %s 个"},
	{regexp.MustCompile(`^record reference of (\S+) \(seed (-?\d+)\): (.*)$`), "无法记录 %s 的参考输出（种子 %s）：%s"},
	{regexp.MustCompile(`^record reference of (\S+): the answer's cell (\S+) raised (\S+): (.*)$`), "无法记录 %s 的参考输出：参考答案的单元格 %s 抛出 %s：%s"},
	{regexp.MustCompile(`^rerun (\S+): (.*)$`), "无法重复执行 %s：%s"},
	{regexp.MustCompile(`^read notebook: (.*)$`), "无法读取笔记本：%s"},
	{regexp.MustCompile(`^needs torch >= (\S+); this runner has torch (\S+)$`), "需要 torch >= %s；这台评分机的 torch 是 %s"},
	{regexp.MustCompile(`^needs torch >= (\S+); torch is not importable on this runner$`), "需要 torch >= %s；这台评分机无法导入 torch"},
	{regexp.MustCompile(`^needs Python >= (\S+); this runner has Python (\S+)$`), "需要 Python >= %s；这台评分机的 Python 是 %s"},
	{regexp.MustCompile(`^needs the npugraph_ex backend; torch\._dynamo\.list_backends\(\) does not list it on this runner \(torch (\S+)\)$`), "需要 npugraph_ex 后端；这台评分机的 torch._dynamo.list_backends() 没有列出它（torch %s）"},
	{regexp.MustCompile(`^needs a cpu runner; this runner has the (\S+) profile$`), "需要 cpu 评分机；这台评分机是 %s 配置"},
	{regexp.MustCompile(`^needs (\S+); this runner has the (\S+) profile$`), "需要 %s；这台评分机是 %s 配置"},
	{regexp.MustCompile(`^register runner: the server speaks runner protocol (\d+), this runner (\d+)$`), "无法登记评分机：服务器使用评分机协议 %s，这台评分机使用 %s"},
	// Last: a reason of several clauses, each worded on its own.
	{regexp.MustCompile(`^(.*); (.*)$`), "%s；%s"},
}

func init() {
	for en, zh := range zhRunWords {
		zhWords[en] = zh
	}
	flagErrors = append(flagErrors, runErrors...)
}
