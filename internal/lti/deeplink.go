package lti

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/npugrade/npugrade/internal/auth"
	"github.com/npugrade/npugrade/internal/domain"
)

// pendingDeepLink is a Deep Linking request waiting for the
// instructor's choice (kept like a login state: single use, expiring).
type pendingDeepLink struct {
	PlatformID   int64            `json:"p"`
	DeploymentID string           `json:"d"`
	UserID       int64            `json:"u"`
	Settings     DeepLinkSettings `json:"s"`
}

// deepLinkTTL is how long the instructor may take to choose.
const deepLinkTTL = time.Hour

// BeginDeepLink keeps a Deep Linking launch's settings for the page
// where its instructor picks exercises, and returns the key to it.
func (t *Tool) BeginDeepLink(ctx context.Context, l Launch) (string, error) {
	if l.Message != MessageDeepLinking || l.DeepLink == nil {
		return "", domain.Errorf(domain.EINVALID, "not a Deep Linking launch")
	}
	if l.Role != domain.RoleInstructor {
		return "", &Error{Reason: "role", Err: domain.Errorf(domain.EFORBIDDEN, "only a course's instructor places exercises in it")}
	}
	key := auth.RandomID(32)
	b, _ := json.Marshal(pendingDeepLink{PlatformID: l.Platform.ID, DeploymentID: l.DeploymentID, UserID: l.User.ID, Settings: *l.DeepLink})
	return key, t.DB.PutLoginState(ctx, "deeplink:"+key, string(b), deepLinkTTL)
}

// DeepLinkResponse is the signed LtiDeepLinkingResponse to post back.
type DeepLinkResponse struct {
	ReturnURL string
	JWT       string
}

// DeepLink answers the request kept under key, for user, with a
// resource link per exercise (Deep Linking 2.0 3.3): each opens
// /lti/launch with custom exercise=ID and asks the platform for a line
// item of the exercise's points, so its scores have a column at once.
func (t *Tool) DeepLink(ctx context.Context, key string, user domain.User, exercises []string) (DeepLinkResponse, error) {
	data, err := t.DB.TakeLoginState(ctx, "deeplink:"+key)
	if err != nil {
		return DeepLinkResponse{}, &Error{Reason: "state", Err: err}
	}
	var pd pendingDeepLink
	if err := json.Unmarshal([]byte(data), &pd); err != nil {
		return DeepLinkResponse{}, fmt.Errorf("read deep link state: %w", err)
	}
	if pd.UserID != user.ID {
		return DeepLinkResponse{}, &Error{Reason: "state", Err: domain.Errorf(domain.EFORBIDDEN, "this choice belongs to another user's launch")}
	}
	p, err := t.DB.LTIPlatformByID(ctx, pd.PlatformID)
	if err != nil {
		return DeepLinkResponse{}, err
	}
	if pd.Settings.AcceptMultiple != nil && !*pd.Settings.AcceptMultiple && len(exercises) > 1 {
		return DeepLinkResponse{}, domain.Errorf(domain.EINVALID, "the course takes one exercise at a time here")
	}
	if len(pd.Settings.AcceptTypes) > 0 && !slices.Contains(pd.Settings.AcceptTypes, "ltiResourceLink") && len(exercises) > 0 {
		return DeepLinkResponse{}, domain.Errorf(domain.EINVALID, "the course does not take LTI resource links here")
	}
	items := []map[string]any{}
	for _, id := range exercises {
		ex, err := t.Catalog.Get(id)
		if err != nil {
			return DeepLinkResponse{}, domain.Errorf(domain.EINVALID, "exercise %q is not served", id)
		}
		title := ex.Title
		if title == "" {
			title = ex.ID
		}
		items = append(items, map[string]any{"type": "ltiResourceLink", "title": title, "url": t.LaunchURL(),
			"custom":   map[string]string{"exercise": ex.ID},
			"lineItem": map[string]any{"scoreMaximum": ex.MaxPoints(nil), "label": title, "resourceId": ex.ID, "tag": "npugrade"}})
	}
	now := t.DB.Now()
	claims := map[string]any{"iss": p.ClientID, "aud": p.Issuer, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"nonce": auth.RandomID(16), ClaimMessageType: MessageDeepLinkResponse, ClaimVersion: "1.3.0",
		ClaimDeploymentID: pd.DeploymentID, ClaimDLItems: items}
	if pd.Settings.Data != "" {
		claims[ClaimDLData] = pd.Settings.Data
	}
	tok, err := t.Keys.Sign(ctx, claims)
	if err != nil {
		return DeepLinkResponse{}, err
	}
	return DeepLinkResponse{ReturnURL: pd.Settings.ReturnURL, JWT: tok}, nil
}
