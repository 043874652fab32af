package lti

import (
	"encoding/json"
	"strings"

	"github.com/npugrade/npugrade/internal/domain"
)

// Claim names of LTI 1.3 Core, AGS, NRPS and Deep Linking 2.0.
const (
	ClaimMessageType  = "https://purl.imsglobal.org/spec/lti/claim/message_type"
	ClaimVersion      = "https://purl.imsglobal.org/spec/lti/claim/version"
	ClaimDeploymentID = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
	ClaimTargetLink   = "https://purl.imsglobal.org/spec/lti/claim/target_link_uri"
	ClaimResourceLink = "https://purl.imsglobal.org/spec/lti/claim/resource_link"
	ClaimRoles        = "https://purl.imsglobal.org/spec/lti/claim/roles"
	ClaimContext      = "https://purl.imsglobal.org/spec/lti/claim/context"
	ClaimCustom       = "https://purl.imsglobal.org/spec/lti/claim/custom"
	ClaimLIS          = "https://purl.imsglobal.org/spec/lti/claim/lis"
	ClaimExt          = "https://purl.imsglobal.org/spec/lti/claim/ext"
	ClaimAGS          = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
	ClaimNRPS         = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
	ClaimDLSettings   = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
	ClaimDLItems      = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"
	ClaimDLData       = "https://purl.imsglobal.org/spec/lti-dl/claim/data"

	MessageResourceLink     = "LtiResourceLinkRequest"
	MessageDeepLinking      = "LtiDeepLinkingRequest"
	MessageDeepLinkResponse = "LtiDeepLinkingResponse"

	ScopeLineItem = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
	ScopeScore    = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
	ScopeNRPS     = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
)

// audience is a JWT aud: one string or a list.
type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*a = audience{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*a = many
	return nil
}

// launchClaims is what npugrade reads of a launch's id_token.
type launchClaims struct {
	Issuer       string   `json:"iss"`
	Subject      string   `json:"sub"`
	Audience     audience `json:"aud"`
	AZP          string   `json:"azp"`
	Expiry       float64  `json:"exp"`
	IssuedAt     float64  `json:"iat"`
	Nonce        string   `json:"nonce"`
	Name         string   `json:"name"`
	Email        string   `json:"email"`
	MessageType  string   `json:"https://purl.imsglobal.org/spec/lti/claim/message_type"`
	Version      string   `json:"https://purl.imsglobal.org/spec/lti/claim/version"`
	DeploymentID string   `json:"https://purl.imsglobal.org/spec/lti/claim/deployment_id"`
	TargetLink   string   `json:"https://purl.imsglobal.org/spec/lti/claim/target_link_uri"`
	Roles        []string `json:"https://purl.imsglobal.org/spec/lti/claim/roles"`
	ResourceLink struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	} `json:"https://purl.imsglobal.org/spec/lti/claim/resource_link"`
	Context struct {
		ID    string `json:"id"`
		Label string `json:"label"`
		Title string `json:"title"`
	} `json:"https://purl.imsglobal.org/spec/lti/claim/context"`
	Custom map[string]any `json:"https://purl.imsglobal.org/spec/lti/claim/custom"`
	LIS    struct {
		PersonSourcedID string `json:"person_sourcedid"`
	} `json:"https://purl.imsglobal.org/spec/lti/claim/lis"`
	Ext struct {
		UserUsername string `json:"user_username"`
	} `json:"https://purl.imsglobal.org/spec/lti/claim/ext"`
	AGS struct {
		Scope     []string `json:"scope"`
		LineItems string   `json:"lineitems"`
		LineItem  string   `json:"lineitem"`
	} `json:"https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"`
	NRPS struct {
		MembershipsURL string `json:"context_memberships_url"`
	} `json:"https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"`
	DeepLinking *DeepLinkSettings `json:"https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"`
}

// DeepLinkSettings are a Deep Linking request's settings: where the
// response goes and what it may hold.
type DeepLinkSettings struct {
	ReturnURL      string   `json:"deep_link_return_url"`
	AcceptTypes    []string `json:"accept_types"`
	AcceptMultiple *bool    `json:"accept_multiple,omitempty"`
	Data           string   `json:"data,omitempty"`
}

// Role is the cohort role of a launch's roles: instructor for a
// context's (or institution's) Instructor, Administrator, content
// developer or teaching assistant, learner otherwise (no roles included:
// LTI allows an anonymous launch, which npugrade treats as a learner's).
func Role(roles []string) domain.Role {
	for _, r := range roles {
		switch {
		case r == "Instructor", r == "Administrator", r == "ContentDeveloper",
			strings.HasSuffix(r, "/membership#Instructor"), strings.HasSuffix(r, "/membership#Administrator"),
			strings.HasSuffix(r, "/membership#ContentDeveloper"), strings.HasSuffix(r, "/membership/Instructor#TeachingAssistant"):
			return domain.RoleInstructor
		}
	}
	return domain.RoleLearner
}

// login is the npugrade user name of a launch's user: the LIS person
// sourcedid (a student number: a roster's user is found), else Moodle's
// user name, else the e-mail, else one made of the platform's user id.
// An unsubstituted LTI variable ("$Person.sourcedId") is no name.
func (c launchClaims) login() string {
	for _, v := range []string{c.LIS.PersonSourcedID, c.Ext.UserUsername, c.Email} {
		// Canvas sends an unset variable as its own name ($Person.sourcedId).
		if v = strings.TrimSpace(v); v != "" && !strings.HasPrefix(v, "$") {
			return v
		}
	}
	return "lti-" + shortHash(c.Issuer, c.Subject)
}
