package accounts

import (
	"context"
	"crypto/rand"
	"math/big"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/npugrade/npugrade/internal/auth"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
)

// Device sign-in defaults (RFC 8628's shape).
const (
	DeviceTTL      = 10 * time.Minute
	DeviceInterval = 5 * time.Second
	// DevicePerAddr codes a client address may ask for per DeviceWindow:
	// enough for a class behind one NAT, few enough to keep the table
	// (and a guesser's pool of live codes) small.
	DevicePerAddr = 60
	DeviceWindow  = time.Minute
	// MaxClientName is the longest client_name, in characters.
	MaxClientName = 100
)

// userCodeAlphabet has no vowels (no words) and no look-alikes.
const userCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"

// DeviceStore is what device sign-in reads and writes.
type DeviceStore interface {
	CreateDeviceGrant(ctx context.Context, g store.NewDeviceGrant) (domain.DeviceGrant, error)
	DeviceGrantByCode(ctx context.Context, userCode string) (domain.DeviceGrant, error)
	DecideDeviceGrant(ctx context.Context, userCode string, userID int64, approve bool) error
	PollDeviceGrant(ctx context.Context, deviceHash string) (domain.DevicePoll, error)
	UserTokens(ctx context.Context, userID int64) ([]domain.TokenInfo, error)
	RevokeUserToken(ctx context.Context, userID, tokenID int64) error
}

// Devices is device-code sign-in and a user's own tokens.
type Devices struct {
	DB DeviceStore
}

// DeviceStart is a new grant as the client sees it.
type DeviceStart struct {
	DeviceCode string
	UserCode   string // XXXX-XXXX
	ExpiresIn  time.Duration
	Interval   time.Duration
}

// Start creates a grant for the client clientName at addr.
func (d *Devices) Start(ctx context.Context, clientName, addr string) (DeviceStart, error) {
	clientName = strings.TrimSpace(clientName)
	if utf8.RuneCountInString(clientName) > MaxClientName || !utf8.ValidString(clientName) {
		return DeviceStart{}, domain.Errorf(domain.EINVALID, "client_name is longer than %d characters", MaxClientName)
	}
	for range 5 { // a drawn code may be taken; 20^8 codes make a clash rare
		device := auth.RandomID(32)
		code := newUserCode()
		_, err := d.DB.CreateDeviceGrant(ctx, store.NewDeviceGrant{DeviceHash: auth.HashToken(device), UserCode: code,
			ClientName: domain.Printable(clientName), ClientAddr: addr, Interval: DeviceInterval, TTL: DeviceTTL,
			PerAddr: DevicePerAddr, Window: DeviceWindow})
		if domain.ErrorCode(err) == domain.ECONFLICT {
			continue
		}
		if err != nil {
			return DeviceStart{}, err
		}
		return DeviceStart{DeviceCode: device, UserCode: FormatUserCode(code), ExpiresIn: DeviceTTL, Interval: DeviceInterval}, nil
	}
	return DeviceStart{}, domain.Errorf(domain.ECONFLICT, "no free sign-in code; try again")
}

func newUserCode() string {
	b := make([]byte, 8)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(userCodeAlphabet))))
		if err != nil {
			panic("accounts: crypto/rand failed: " + err.Error()) // the OS RNG does not fail on Linux
		}
		b[i] = userCodeAlphabet[n.Int64()]
	}
	return string(b)
}

// FormatUserCode shows a normalised code as XXXX-XXXX.
func FormatUserCode(code string) string {
	if len(code) != 8 {
		return code
	}
	return code[:4] + "-" + code[4:]
}

// NormalizeUserCode reads a code as typed: any case, dashes and spaces
// ignored. ok is false when it cannot be a code.
func NormalizeUserCode(s string) (string, bool) {
	s = strings.ToUpper(strings.NewReplacer("-", "", " ", "").Replace(s))
	if len(s) != 8 {
		return "", false
	}
	for _, r := range s {
		if !strings.ContainsRune(userCodeAlphabet, r) {
			return "", false
		}
	}
	return s, true
}

// Poll answers a client's poll with its device code.
func (d *Devices) Poll(ctx context.Context, deviceCode string) (domain.DevicePoll, error) {
	if deviceCode == "" {
		return domain.DevicePoll{Outcome: domain.PollInvalid}, nil
	}
	return d.DB.PollDeviceGrant(ctx, auth.HashToken(deviceCode))
}

// Grant is the grant of a code as typed (ENOTFOUND when none).
func (d *Devices) Grant(ctx context.Context, code string) (domain.DeviceGrant, error) {
	c, ok := NormalizeUserCode(code)
	if !ok {
		return domain.DeviceGrant{}, domain.Errorf(domain.ENOTFOUND, "no such sign-in code")
	}
	return d.DB.DeviceGrantByCode(ctx, c)
}

// Decide approves or denies a code for u. Runner accounts are no
// learners and cannot approve (EFORBIDDEN); an unknown, expired or
// decided code is ECONFLICT.
func (d *Devices) Decide(ctx context.Context, u domain.User, code string, approve bool) error {
	if u.Role == domain.RoleRunner {
		return domain.Errorf(domain.EFORBIDDEN, "runner accounts cannot approve a sign-in")
	}
	c, ok := NormalizeUserCode(code)
	if !ok {
		return domain.Errorf(domain.ECONFLICT, "the sign-in code is unknown, expired or used")
	}
	return d.DB.DecideDeviceGrant(ctx, c, u.ID, approve)
}

// Tokens lists u's own tokens that are not revoked.
func (d *Devices) Tokens(ctx context.Context, u domain.User) ([]domain.TokenInfo, error) {
	return d.DB.UserTokens(ctx, u.ID)
}

// Revoke revokes u's own token id (ENOTFOUND for anyone else's).
func (d *Devices) Revoke(ctx context.Context, u domain.User, id int64) error {
	return d.DB.RevokeUserToken(ctx, u.ID, id)
}
