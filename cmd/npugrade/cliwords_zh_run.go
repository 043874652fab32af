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

	// runner.
	"the server refused to register this runner: %d %s: %s":                                                                    "服务器拒绝登记这台评分机：%d %s：%s",
	"%d NPU device nodes found, but the environment has the cpu profile (no usable torch_npu): kernels are not pinned to them": "找到 %d 个 NPU 设备节点，但环境是 cpu 配置（没有可用的 torch_npu）：内核不绑定到这些设备",
	"profile %s needs an NPU, but this runner was given none: %s; on Kubernetes the pod must request one (resources.limits huawei.com/Ascend910: 1, see docs/operations.md), elsewhere check --devices and --dev-root": "配置 %s 需要 NPU，但这台评分机没有分到：%s；在 Kubernetes 上 Pod 须申请一个（resources.limits huawei.com/Ascend910: 1，见 docs/operations.md），其他环境请检查 --devices 和 --dev-root",
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
	{regexp.MustCompile(`^(.*); (.*)$`), "%s；%s"},
	{regexp.MustCompile(`^(".*") is not PROFILE=NAME$`), "%s 不是 PROFILE=NAME"},
	{regexp.MustCompile(`^environment name (".*"): want lower-case letters, digits, '\.', '_' or '-' \(not (".*")\)$`), "环境名 %s 无效：只能用小写字母、数字、“.”、“_”或“-”（且不能是 %s）"},
	{regexp.MustCompile(`^environment (".*") in (\S+): (.*) \(build it with (.*), or import one with (.*)\)$`), "%[2]s 中没有评分环境 %[1]s：%[3]s（请用 %[4]s 构建，或用 %[5]s 导入）"},
	{regexp.MustCompile(`^register runner: the server speaks runner protocol (\d+), this runner (\d+)$`), "无法登记评分机：服务器使用评分机协议 %s，这台评分机使用 %s"},
}

func init() {
	for en, zh := range zhRunWords {
		zhWords[en] = zh
	}
	flagErrors = append(flagErrors, runErrors...)
}
