package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// secretPrefix starts every signing secret, as Standard Webhooks libraries
// expect.
const secretPrefix = "whsec_"

// Errors of Verify.
var (
	// ErrSignature: the signature is missing, malformed or does not match.
	ErrSignature = errors.New("webhooks: invalid signature")
	// ErrTimestamp: the timestamp is missing or too far from now (a replayed
	// or delayed message).
	ErrTimestamp = errors.New("webhooks: timestamp out of tolerance")
)

// newSecret is a fresh signing secret: whsec_ and 32 random bytes in
// base64.
func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return secretPrefix + base64.StdEncoding.EncodeToString(b)
}

// secretKey is the HMAC key of a whsec_ secret (its base64 part decoded).
func secretKey(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("%w: the secret is not whsec_ and base64", ErrSignature)
	}
	return key, nil
}

// Sign is the webhook-signature value of body sent as message id at ts:
// "v1," and the base64 HMAC-SHA256 of "id.timestamp.body" keyed with the
// secret's decoded bytes.
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := secretKey(secret)
	if err != nil {
		return "", err
	}
	return "v1," + sign(key, id, strconv.FormatInt(ts.Unix(), 10), body), nil
}

func sign(key []byte, id, ts string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Verify checks a received message as a receiver should: the timestamp
// within tolerance of now (5 minutes when tolerance is 0), and one of the
// space-separated v1 signatures matching the body. It returns
// ErrTimestamp or ErrSignature.
func Verify(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance == 0 {
		tolerance = 5 * time.Minute
	}
	key, err := secretKey(secret)
	if err != nil {
		return err
	}
	id, tsRaw, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || sigs == "" {
		return fmt.Errorf("%w: missing %s or %s", ErrSignature, HeaderID, HeaderSignature)
	}
	ts, err := strconv.ParseInt(tsRaw, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s is not a Unix time", ErrTimestamp, HeaderTimestamp)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return ErrTimestamp
	}
	want := sign(key, id, tsRaw, body)
	for _, s := range strings.Fields(sigs) {
		v, sig, ok := strings.Cut(s, ",")
		if ok && v == "v1" && hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return ErrSignature
}
