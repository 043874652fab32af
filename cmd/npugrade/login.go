package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/npugrade/npugrade/internal/problem"
)

// cliConfig is what npugrade login saves: the server and the token it
// issued, read by submit when neither --token nor NPUGRADE_TOKEN is given.
type cliConfig struct {
	Server string `json:"server"`
	Token  string `json:"token"`
}

// configPath is $XDG_CONFIG_HOME/npugrade/config.json, else
// ~/.config/npugrade/config.json.
func configPath() (string, error) {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find the config directory: %w", err)
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "npugrade", "config.json"), nil
}

// readConfig is the saved config; none is the zero config.
func readConfig() cliConfig {
	var c cliConfig
	p, err := configPath()
	if err != nil {
		return c
	}
	if b, err := os.ReadFile(p); err == nil {
		_ = json.Unmarshal(b, &c)
	}
	return c
}

// writeConfig saves c readable by its owner alone: the token is a secret.
func writeConfig(c cliConfig) (string, error) {
	p, err := configPath()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", filepath.Dir(p), err)
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, p); err != nil {
		return "", fmt.Errorf("save %s: %w", p, err)
	}
	return p, nil
}

func cmdLogin(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newCommand(ctx, "login", "", "Sign in with a code approved in the browser (device sign-in) and save the token\nto $XDG_CONFIG_HOME/npugrade/config.json (else ~/.config/npugrade/config.json, mode 0600),\nwhich npugrade submit uses when neither --token nor NPUGRADE_TOKEN is given.", envServer)
	server := fs.String("server", envOr("NPUGRADE_SERVER", "http://127.0.0.1:8080"), "server URL")
	if _, code, ok := fs.parse(args, 0, 0, stdout, stderr); !ok {
		return code
	}
	w := fs.words()
	base, err := serverURL(w, *server)
	if err != nil {
		return fs.usageError(stderr, err.Error())
	}
	host, _ := os.Hostname()
	token, user, err := deviceLogin(ctx, base, "npugrade login on "+host, w, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade login:", err)
		return exitError
	}
	p, err := writeConfig(cliConfig{Server: base, Token: token})
	if err != nil {
		fmt.Fprintln(stderr, "npugrade login:", sysProblem(w, err))
		return exitError
	}
	fmt.Fprint(stdout, loginLines(w, "已登录为 %s，令牌已保存到 %s\n", "Signed in as %s; the token is saved in %s\n", user, p))
	return exitOK
}

// loginLines is a line of login in Chinese, and in English too unless the
// language is Chinese: a learner at a lab machine whose locale is English
// (or C) may read only Chinese.
func loginLines(w words, zh, en string, a ...any) string {
	if w.lang == langZH {
		return fmt.Sprintf(zh, a...)
	}
	return fmt.Sprintf(zh, a...) + fmt.Sprintf(en, a...)
}

type deviceCodeReply struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int    `json:"expires_in"`
	Interval                int    `json:"interval"`
}

// deviceLogin runs the device flow against base: asks for a code,
// prints it, and polls at the interval until the learner decides.
func deviceLogin(ctx context.Context, base, client string, w words, out io.Writer) (token, user string, err error) {
	var dc deviceCodeReply
	if _, err := devicePost(ctx, base+"/api/v1/device/code", url.Values{"client_name": {client}}, w, &dc); err != nil {
		return "", "", err
	}
	fmt.Fprint(out, loginLines(w, "请在浏览器中打开 %s 并输入验证码 %s\n  （或直接打开 %s）\n", "Open %s in your browser and enter the code %s\n  (or open %s)\n",
		dc.VerificationURI, dc.UserCode, dc.VerificationURIComplete))
	interval := time.Duration(max(dc.Interval, 1)) * time.Second
	deadline := time.Now().Add(time.Duration(dc.ExpiresIn) * time.Second)
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "device_code": {dc.DeviceCode}}
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return "", "", ctx.Err()
		case <-time.After(interval):
		}
		var reply struct {
			AccessToken string `json:"access_token"`
			User        string `json:"user"`
			Error       string `json:"error"`
			Detail      string `json:"detail"`
		}
		status, err := devicePost(ctx, base+"/api/v1/device/token", form, w, &reply)
		if err != nil {
			return "", "", err
		}
		switch {
		case status == http.StatusOK && reply.AccessToken != "":
			return reply.AccessToken, reply.User, nil
		case reply.Error == "authorization_pending":
		case reply.Error == "slow_down":
			interval += 5 * time.Second
		case reply.Error == "access_denied":
			return "", "", errors.New(loginLines(w, "登录被拒绝", " / the sign-in was denied"))
		case reply.Error == "expired_token":
			return "", "", errors.New(loginLines(w, "验证码已过期，请重新运行 npugrade login", " / the code expired; run npugrade login again"))
		default:
			return "", "", w.Errorf("the server refused: %s %s", reply.Error, reply.Detail)
		}
	}
	return "", "", errors.New(loginLines(w, "验证码已过期，请重新运行 npugrade login", " / the code expired; run npugrade login again"))
}

// devicePost posts form and decodes the JSON reply (a token or an RFC
// 8628 error); other failures are errors.
func devicePost(ctx context.Context, u string, form url.Values, w words, into any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept-Language", w.lang)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, w.Errorf("cannot reach the server %s: %s", req.URL.Host, sysProblem(w, err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, w.Errorf("read %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusBadRequest {
		msg := strings.TrimSpace(string(b))
		if p := problem.Decode(resp.StatusCode, b); p.Message != "" {
			msg = p.Message
		}
		return resp.StatusCode, fmt.Errorf("%s: %d %s: %s", u, resp.StatusCode, w.T(http.StatusText(resp.StatusCode)), oneLine(msg))
	}
	if err := json.Unmarshal(b, into); err != nil {
		return resp.StatusCode, w.Errorf("%s: not JSON: %w", u, err)
	}
	return resp.StatusCode, nil
}
