"""npugrade: check and submit TorchAir exercises from inside Jupyter.

中文
----
在笔记本里输入三行即可检查和提交练习::

    import npugrade
    npugrade.login()          # 按提示在浏览器中确认登录（或 configure(token=...)）
    npugrade.check()          # 不计次数的检查：在真实评分环境中评分，不占用提交次数
    npugrade.submit()         # 正式提交：计入次数，显示得分和剩余次数

- ``login(server=None)``：登录。在 JupyterHub 中自动用本服务器的会话换取令牌；
  否则显示一个短码和网址，在已登录的浏览器中确认即可。
- ``configure(server=None, token=None)``：直接设置服务器和令牌
  （也读取环境变量 ``NPUGRADE_SERVER`` / ``NPUGRADE_TOKEN``）。
- ``check(question=None, notebook=None, exercise=None)``：检查已保存的笔记本
  （默认是当前笔记本）；``question=3``（题号）或 ``question="q3"``（单元格 id）只显示该题。返回的对象有
  ``.score``、``.max_score``、``.cells``。
- ``submit(notebook=None, exercise=None)``：正式提交并等待评分结果。
- ``status()``：各练习的截止时间、延期、剩余次数、最佳/最新得分。

检查前请先保存笔记本（Ctrl+S）：服务器评的是磁盘上的文件。

English
-------
Three lines in a notebook check and submit an exercise::

    import npugrade
    npugrade.login()          # approve the code in your browser (or configure(token=...))
    npugrade.check()          # an uncounted check, graded in the real grading environment
    npugrade.submit()         # a counted submission: score and attempts left

- ``login(server=None)`` signs in: inside JupyterHub it exchanges the
  single-user server's token; elsewhere it shows a short code and a URL to
  approve in the browser where you are signed in.
- ``configure(server=None, token=None)`` sets both directly (also from
  ``NPUGRADE_SERVER`` / ``NPUGRADE_TOKEN``).
- ``check(question=None, notebook=None, exercise=None)`` checks the saved
  notebook (the current one by default); ``question=3`` (its number) or ``question="q3"`` (a cell id) shows only that
  question. The result has ``.score``, ``.max_score`` and ``.cells``.
- ``submit(notebook=None, exercise=None)`` submits for a grade and waits.
- ``status()`` shows deadlines, extensions, attempts left and scores.

Save the notebook first (Ctrl+S): the server grades the file on disk.

Only the Python standard library is used (Python 3.9 or newer).
"""

import glob
import hashlib
import html
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

__version__ = "1.0.0"
__all__ = ["login", "configure", "check", "submit", "status", "NpugradeError", "Result"]

# The server that served this file writes its own URL here.
_SERVED_BY = None

_state = {"server": None, "token": None}


class NpugradeError(Exception):
    """One clear sentence about what went wrong (shown without a traceback in Jupyter)."""

    def _render_traceback_(self):  # IPython shows this instead of a traceback
        return ["npugrade: " + str(self)]


def _config_path():
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "npugrade", "config.json")


def _read_config():
    try:
        with open(_config_path(), encoding="utf-8") as f:
            cfg = json.load(f)
        return cfg if isinstance(cfg, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_config(server, token):
    path = _config_path()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"server": server, "token": token}, f)
    except OSError:
        pass  # signed in for this kernel; only the next one must sign in again


def _server():
    s = _state["server"] or os.environ.get("NPUGRADE_SERVER") or _read_config().get("server") or _SERVED_BY
    if not s:
        raise NpugradeError("未设置服务器地址：请调用 npugrade.configure(server=...)。"
                            "(No server set: call npugrade.configure(server=...).)")
    return s.rstrip("/")


def _token():
    t = _state["token"] or os.environ.get("NPUGRADE_TOKEN")
    if not t:
        cfg = _read_config()
        if cfg.get("token") and (not cfg.get("server") or cfg.get("server").rstrip("/") == _server()):
            t = cfg["token"]
    if not t:
        raise NpugradeError("尚未登录：请先运行 npugrade.login()。(Not signed in: run npugrade.login() first.)")
    return t


def configure(server=None, token=None):
    """Set the server URL and/or the API token for this kernel."""
    if server is not None:
        _state["server"] = server.rstrip("/")
    if token is not None:
        _state["token"] = token.strip()


def _request(method, path, body=None, headers=None, auth=True, timeout=30):
    """Send a request; return (status, parsed JSON or None, response headers)."""
    url = _server() + path
    h = {"Accept": "application/json", "User-Agent": "npugrade.py/" + __version__,
         "Accept-Language": "zh-CN,zh;q=0.9,en;q=0.5"}
    if auth:
        h["Authorization"] = "Bearer " + _token()
    h.update(headers or {})
    req = urllib.request.Request(url, data=body, headers=h, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, _json(resp.read()), resp.headers
    except urllib.error.HTTPError as e:
        return e.code, _json(e.read()), e.headers
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise NpugradeError("无法连接服务器 %s（%s）。(Cannot reach the server %s: %s.)"
                            % (_server(), reason, _server(), reason)) from None


def _json(b):
    try:
        return json.loads(b.decode("utf-8")) if b else None
    except ValueError:
        return None


def _fail(status, doc, headers):
    """Raise the server's problem as one sentence."""
    doc = doc if isinstance(doc, dict) else {}
    detail = doc.get("detail") or doc.get("title") or ("HTTP %d" % status)
    problems = doc.get("problems") or []
    if problems:
        detail += ": " + "; ".join(str(p) for p in problems[:5])
    if status == 401:
        raise NpugradeError("登录已失效或令牌无效：请重新运行 npugrade.login()。"
                            "(Not signed in or the token was revoked: run npugrade.login() again.)")
    if status == 429:
        wait = headers.get("Retry-After") if headers else None
        raise NpugradeError("%s（请 %s 秒后再试 / retry in %s s）" % (detail, wait or "?", wait or "?"))
    raise NpugradeError(detail)


def _in_jupyter():
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


def _show(text, html_text):
    if _in_jupyter():
        from IPython.display import HTML, display
        display(HTML(html_text))
    else:
        print(text)


# --- signing in ---------------------------------------------------------


def login(server=None):
    """Sign in: JupyterHub's token when running under a hub, else the device code."""
    if server is not None:
        configure(server=server)
    hub = os.environ.get("JUPYTERHUB_API_TOKEN")
    if hub:
        st, doc, _ = _request("POST", "/api/v1/auth/jupyterhub", json.dumps({"token": hub}).encode(),
                              {"Content-Type": "application/json"}, auth=False)
        if st == 200 and isinstance(doc, dict) and doc.get("access_token"):
            return _signed_in(doc)
        if st not in (404, 501):  # 404/501: this server does not know the hub; use the code
            _fail(st, doc, None)
    name = "npugrade.py on " + (os.environ.get("HOSTNAME") or os.uname().nodename)
    st, doc, hdrs = _request("POST", "/api/v1/device/code", json.dumps({"client_name": name[:100]}).encode(),
                             {"Content-Type": "application/json"}, auth=False)
    if st != 200 or not isinstance(doc, dict):
        _fail(st, doc, hdrs)
    url = doc.get("verification_uri_complete") or doc["verification_uri"]
    code = doc["user_code"]
    _show("请在浏览器中打开 %s 并确认代码 %s。\nOpen %s in your browser and approve the code %s."
          % (url, code, url, code),
          '<p>请在浏览器中打开 / Open <a href="%s" target="_blank">%s</a>，确认代码 / approve the code '
          '<b style="font-size:1.3em;letter-spacing:.1em">%s</b></p>'
          % (html.escape(url, True), html.escape(url), html.escape(code)))
    interval = max(1, int(doc.get("interval", 5)))
    deadline = time.monotonic() + int(doc.get("expires_in", 600))
    form = urllib.parse.urlencode({"grant_type": "urn:ietf:params:oauth:grant-type:device_code",
                                   "device_code": doc["device_code"]}).encode()
    while time.monotonic() < deadline:
        time.sleep(interval)
        st, tok, hdrs = _request("POST", "/api/v1/device/token", form,
                                 {"Content-Type": "application/x-www-form-urlencoded"}, auth=False)
        if st == 200 and isinstance(tok, dict) and tok.get("access_token"):
            return _signed_in(tok)
        err = tok.get("error") if isinstance(tok, dict) else None
        if err == "authorization_pending":
            continue
        if err == "slow_down":
            interval += 5
            continue
        if err == "access_denied":
            raise NpugradeError("登录请求被拒绝。(The sign-in was denied.)")
        if err == "expired_token":
            break
        _fail(st, tok, hdrs)
    raise NpugradeError("代码已过期：请重新运行 npugrade.login()。(The code expired: run npugrade.login() again.)")


def _signed_in(doc):
    configure(token=doc["access_token"])
    _save_config(_server(), doc["access_token"])
    who = doc.get("user") or ""
    _show("已登录 / Signed in%s." % (" as " + who if who else ""),
          "<p>已登录 / Signed in%s.</p>" % (" as <b>%s</b>" % html.escape(who) if who else ""))
    return who


# --- the notebook and its exercise ----------------------------------------


def _current_notebook():
    """The notebook this kernel runs, or the .ipynb modified last here."""
    for var in ("JPY_SESSION_NAME", "NPUGRADE_NOTEBOOK"):
        p = os.environ.get(var)
        if p and p.endswith(".ipynb") and os.path.isfile(p):
            return p
    files = [f for f in glob.glob("*.ipynb") if os.path.isfile(f)]
    if not files:
        raise NpugradeError("找不到笔记本文件：请先保存（Ctrl+S），或传入 notebook=\"文件名.ipynb\"。"
                            "(No saved notebook found: save it (Ctrl+S) or pass notebook=\"name.ipynb\".)")
    return max(files, key=os.path.getmtime)


def _read_notebook(notebook):
    path = notebook or _current_notebook()
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise NpugradeError("无法读取笔记本 %s（%s）。(Cannot read the notebook %s: %s.)"
                            % (path, e.strerror, path, e.strerror)) from None
    return path, data


def _exercise_for(path, data, exercise):
    """The exercise id: given, in the notebook's metadata, or by its file name."""
    if exercise:
        return exercise
    try:
        meta = json.loads(data.decode("utf-8")).get("metadata", {})
        given = (meta.get("npugrade") or {}).get("exercise")
        if isinstance(given, str) and given:
            return given
    except (ValueError, AttributeError, UnicodeDecodeError):
        pass
    st, exercises, hdrs = _request("GET", "/api/v1/exercises")
    if st != 200 or not isinstance(exercises, list):
        _fail(st, exercises, hdrs)
    stem = os.path.splitext(os.path.basename(path))[0]
    best, best_len = None, 0
    for ex in exercises:
        start = os.path.splitext(ex.get("notebook") or "")[0]
        if start and stem.startswith(start) and len(start) > best_len:
            best, best_len = ex["id"], len(start)
    if best is None:
        names = ", ".join(ex["id"] for ex in exercises)
        raise NpugradeError("无法从文件名 %s 判断是哪个练习：请传入 exercise=（可选：%s）。"
                            "(Cannot tell the exercise from the file name %s: pass exercise= (one of %s).)"
                            % (os.path.basename(path), names, os.path.basename(path), names))
    return best


def _multipart(exercise, path, data):
    boundary = "npugrade-" + uuid.uuid4().hex
    name = os.path.basename(path).replace('"', "_")
    parts = [
        "--%s\r\nContent-Disposition: form-data; name=\"exercise\"\r\n\r\n%s\r\n" % (boundary, exercise),
        "--%s\r\nContent-Disposition: form-data; name=\"notebook\"; filename=\"%s\"\r\n"
        "Content-Type: application/octet-stream\r\n\r\n" % (boundary, name),
    ]
    body = "".join(parts).encode("utf-8") + data + ("\r\n--%s--\r\n" % boundary).encode()
    return body, "multipart/form-data; boundary=" + boundary


# --- results --------------------------------------------------------------


_VERDICTS = {
    "pass": "通过 pass", "mismatch": "输出不符 mismatch", "error": "出错 error", "timeout": "超时 timeout",
    "missing": "缺失 missing", "not-run": "未运行 not run", "needs-manual": "待人工评分 manual",
    "manual": "人工评分 manual", "tampered": "被改动 tampered", "incomplete-output": "输出不完整 incomplete",
    "memory-limit": "内存超限 memory limit",
}


class Result:
    """A graded check or submission: .score, .max_score, .cells (list of dicts)."""

    def __init__(self, doc, question=None, check=True, left=None):
        self.id = doc.get("id")
        self.kind = doc.get("kind") or ("check" if check else "submission")
        self.status = doc.get("status")
        self.score = doc.get("score", 0)
        self.max_score = doc.get("max_score", 0)
        self.message = doc.get("message") or ""
        cells = doc.get("cells") or []
        if question is not None:
            cells = [c for c in cells if question in (c.get("id"), c.get("question"))]
        self.cells = cells
        self.question = question
        self.attempts_left = left

    @staticmethod
    def _label(c):
        """The question as the notebook numbers it (第 13 题), else the cell id."""
        if not c.get("question"):
            return str(c.get("id"))
        label = "第 %d 题" % c["question"]
        if c.get("hidden_test"):
            label += " 隐藏测试"
        return label

    def failing(self):
        """The ids of the questions that did not pass."""
        return [c.get("id") for c in self.cells if c.get("verdict") not in ("pass", "manual", "needs-manual")]

    def _title(self):
        what = "检查（不计次数）/ Check (uncounted)" if self.kind == "check" else "提交 / Submission"
        t = "%s: %g / %g" % (what, self.score, self.max_score)
        if self.question is not None:
            t = "%s — %s" % (what, self.question)
        if self.attempts_left is not None:
            t += "，剩余次数 / attempts left: %d" % self.attempts_left
        return t

    def __repr__(self):
        lines = [self._title()]
        if self.status == "failed":
            lines.append("评分失败 / grading failed: " + self.message)
        for c in self.cells:
            first = ((c.get("message") or "").splitlines() or [""])[0]
            lines.append("  %-12s %-18s %g/%g  %s" % (self._label(c), _VERDICTS.get(c.get("verdict"), c.get("verdict")),
                                                      c.get("points", 0), c.get("max_points", 0), first))
        if self.question is not None and not self.cells:
            lines.append("  没有这道题 / no such question: %s" % self.question)
        return "\n".join(lines)

    def _repr_html_(self):
        rows = []
        for c in self.cells:
            ok = c.get("verdict") == "pass"
            rows.append("<tr><td>%s</td><td style=\"color:%s\">%s</td><td>%g / %g</td><td style=\"text-align:left\">%s</td></tr>"
                        % (html.escape(self._label(c)), "#18794e" if ok else "#b42318",
                           html.escape(_VERDICTS.get(c.get("verdict"), str(c.get("verdict")))),
                           c.get("points", 0), c.get("max_points", 0),
                           html.escape(c.get("message") or "").replace("\n", "<br>")))
        if self.question is not None and not self.cells:
            rows.append("<tr><td colspan=4>没有这道题 / no such question: %s</td></tr>" % html.escape(str(self.question)))
        extra = ""
        if self.status == "failed":
            extra = "<p>评分失败 / grading failed: %s</p>" % html.escape(self.message)
        return ("<div class=\"npugrade-result\"><p><b>%s</b></p>%s<table><thead><tr><th>题目 Question</th>"
                "<th>结果 Verdict</th><th>得分 Points</th><th>说明 Message</th></tr></thead><tbody>%s</tbody></table></div>"
                % (html.escape(self._title()), extra, "".join(rows)))


def _wait(location, timeout):
    """Poll the check or submission until it is graded, with a progress line."""
    start = time.monotonic()
    delay = 0.5
    shown = False
    while True:
        st, doc, hdrs = _request("GET", location)
        if st != 200 or not isinstance(doc, dict):
            _fail(st, doc, hdrs)
        if doc.get("status") not in ("queued", "running"):
            if shown:
                sys.stdout.write("\r" + " " * 60 + "\r")
                sys.stdout.flush()
            return doc
        waited = time.monotonic() - start
        if waited > timeout:
            raise NpugradeError("评分尚未完成（已等待 %d 秒）：稍后用 npugrade.status() 查看。"
                                "(Not graded yet after %d s: see npugrade.status() later.)" % (waited, waited))
        what = "排队中 queued" if doc.get("status") == "queued" else "评分中 running"
        note = doc.get("waiting_for") or ""
        sys.stdout.write("\r%s… %ds %s" % (what, waited, note[:40]))
        sys.stdout.flush()
        shown = True
        time.sleep(delay)
        delay = min(delay * 1.5, 3)


def _send(kind, notebook, exercise, timeout):
    path, data = _read_notebook(notebook)
    ex = _exercise_for(path, data, exercise)
    body, ctype = _multipart(ex, path, data)
    headers = {"Content-Type": ctype}
    if kind == "submissions":
        # The CLI's key: the same notebook resent is the same submission.
        h = hashlib.sha256(ex.encode() + b"\0" + data).hexdigest()[:40]
        headers["Idempotency-Key"] = "npugrade-submit-" + h
    st, doc, hdrs = _request("POST", "/api/v1/" + kind, body, headers, timeout=120)
    if st != 202 or not isinstance(doc, dict):
        _fail(st, doc, hdrs)
    return ex, _wait("/api/v1/%s/%s" % (kind, doc["id"]), timeout)


def check(question=None, notebook=None, exercise=None, timeout=600):
    """An uncounted check of the saved notebook: graded exactly like a submission, no attempt used."""
    _, doc = _send("checks", notebook, exercise, timeout)
    r = Result(doc, question=question, check=True)
    _display(r)
    return r


def submit(notebook=None, exercise=None, timeout=600):
    """A counted submission of the saved notebook; shows the grade and the attempts left."""
    ex, doc = _send("submissions", notebook, exercise, timeout)
    left = None
    st, standing, _ = _request("GET", "/api/v1/status")
    if st == 200 and isinstance(standing, list):
        for s in standing:
            if s.get("exercise") == ex:
                left = s.get("attempts_left")
    r = Result(doc, check=False, left=left)
    _display(r)
    return r


def _display(r):
    if _in_jupyter():
        from IPython.display import display
        display(r)
    else:
        print(repr(r))


class Status(list):
    """The learner's standing per exercise (a list of dicts)."""

    def __repr__(self):
        lines = ["%-6s %-26s %-10s %-12s %s" % ("练习", "截止 deadline", "剩余 left", "得分 score", "最新 latest")]
        for s in self:
            left = "∞" if s.get("attempts_left") is None else str(s["attempts_left"])
            deadline = (s.get("deadline") or "—")[:16] + (" (延期 ext.)" if s.get("extension") else "")
            latest = "—" if s.get("latest_score") is None else "%g" % s["latest_score"]
            lines.append("%-6s %-26s %-10s %-12s %s" % (s.get("exercise"), deadline, left,
                                                         "%g / %g" % (s.get("score", 0), s.get("max_points", 0)), latest))
        return "\n".join(lines)

    def _repr_html_(self):
        rows = []
        for s in self:
            left = "∞" if s.get("attempts_left") is None else str(s["attempts_left"])
            deadline = html.escape((s.get("deadline") or "—")[:16]) + (" （延期 extension）" if s.get("extension") else "")
            latest = "—" if s.get("latest_score") is None else "%g" % s["latest_score"]
            rows.append("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%g / %g</td><td>%s</td></tr>"
                        % (html.escape(s.get("exercise", "")), html.escape(s.get("title", "")), deadline, left,
                           s.get("score", 0), s.get("max_points", 0), latest))
        return ("<table class=\"npugrade-status\"><thead><tr><th>练习 Exercise</th><th>标题 Title</th>"
                "<th>截止 Deadline</th><th>剩余次数 Attempts left</th><th>计分 Counted</th><th>最新 Latest</th>"
                "</tr></thead><tbody>%s</tbody></table>" % "".join(rows))


def status():
    """Deadline, extension, attempts left and best/latest score of every exercise."""
    st, doc, hdrs = _request("GET", "/api/v1/status")
    if st != 200 or not isinstance(doc, list):
        _fail(st, doc, hdrs)
    s = Status(doc)
    _display(s)
    return s
