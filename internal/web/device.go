package web

import (
	"context"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/accounts"
	"github.com/npugrade/npugrade/internal/domain"
)

// Devices is device-code sign-in's approval and a user's own tokens
// (accounts.Devices).
type Devices interface {
	Grant(ctx context.Context, code string) (domain.DeviceGrant, error)
	Decide(ctx context.Context, u domain.User, code string, approve bool) error
	Tokens(ctx context.Context, u domain.User) ([]domain.TokenInfo, error)
	Revoke(ctx context.Context, u domain.User, id int64) error
}

type deviceData struct {
	Grant   *domain.DeviceGrant
	Code    string // XXXX-XXXX
	Ask     bool   // show the form that asks for a code
	Message string // an i18n key
}

// devicePage shows the grant of ?code= with Approve and Deny, or asks
// for a code.
func (h *handler) devicePage(c *gin.Context) {
	code := c.Query("code")
	if code == "" {
		h.renderDevice(c, http.StatusOK, deviceData{Ask: true})
		return
	}
	g, err := h.Devices.Grant(c.Request.Context(), code)
	switch {
	case domain.ErrorCode(err) == domain.ENOTFOUND:
		h.renderDevice(c, http.StatusNotFound, deviceData{Ask: true, Message: "device.bad"})
		return
	case err != nil:
		h.fail(c, err)
		return
	case g.Status != domain.DevicePending || (h.Policy != nil && h.Policy.Now != nil && !h.Policy.Now().Before(g.ExpiresAt)):
		h.renderDevice(c, http.StatusGone, deviceData{Ask: true, Message: "device.bad"})
		return
	}
	h.renderDevice(c, http.StatusOK, deviceData{Grant: &g, Code: accounts.FormatUserCode(g.UserCode)})
}

func (h *handler) decideDevice(c *gin.Context) {
	u := sessionOf(c).User
	approve := c.PostForm("decision") == "approve"
	err := h.Devices.Decide(c.Request.Context(), u, c.PostForm("code"), approve)
	switch domain.ErrorCode(err) {
	case "":
	case domain.EFORBIDDEN:
		h.renderDevice(c, http.StatusForbidden, deviceData{Message: "device.runner"})
		return
	case domain.ECONFLICT, domain.ENOTFOUND:
		h.renderDevice(c, http.StatusConflict, deviceData{Ask: true, Message: "device.bad"})
		return
	default:
		h.fail(c, err)
		return
	}
	msg := "device.denied"
	if approve {
		msg = "device.approved"
	}
	h.auditAs(c, u, domain.AuditDeviceDecided, u.Name, msg+" from "+c.ClientIP())
	h.renderDevice(c, http.StatusOK, deviceData{Message: msg})
}

func (h *handler) renderDevice(c *gin.Context, status int, d deviceData) {
	h.render(c, status, "device", translate(c.GetString(ctxLang), "device.title"), "", d)
}

type accountData struct {
	Tokens  []domain.TokenInfo
	Message string
}

// accountPage lists the user's own tokens (signed-in devices).
func (h *handler) accountPage(c *gin.Context) { h.renderAccount(c, http.StatusOK, "") }

func (h *handler) renderAccount(c *gin.Context, status int, msg string) {
	toks, err := h.Devices.Tokens(c.Request.Context(), sessionOf(c).User)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.render(c, status, "account", translate(c.GetString(ctxLang), "account.title"), "account", accountData{Tokens: toks, Message: msg})
}

func (h *handler) revokeOwnToken(c *gin.Context) {
	u := sessionOf(c).User
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err == nil {
		err = h.Devices.Revoke(c.Request.Context(), u, id)
	} else {
		err = domain.Errorf(domain.ENOTFOUND, "token not found")
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.auditAs(c, u, domain.AuditTokenRevoked, u.Name, "own token "+c.Param("id"))
	c.Redirect(http.StatusSeeOther, "/account")
}
