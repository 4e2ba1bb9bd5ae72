package provider

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// The provider's text never reaches a client; its debug detail masks
// credentials.
func TestDescribeAndDetailKeepSecretsOut(t *testing.T) {
	t.Parallel()
	const key = "sk-proj-AbCdEf0123456789xyzXYZ"
	err := &openai.APIError{HTTPStatusCode: http.StatusUnauthorized, Message: "Incorrect API key provided: " + key + ". Bearer abc.def"}
	if d := Describe(err); d != "provider answered 401 (authentication failed)" {
		t.Fatalf("Describe = %q", d)
	}
	for _, e := range []error{err, errors.New(`upstream said api_key="hunter2hunter2" token: tok_1234`)} {
		d := Detail(e)
		for _, secret := range []string{key, "abc.def", "hunter2hunter2", "tok_1234"} {
			if strings.Contains(d, secret) {
				t.Errorf("Detail(%v) = %q keeps %q", e, d, secret)
			}
		}
	}
	if got := Describe(&timeoutError{phase: "between chunks"}); !strings.Contains(got, "between chunks") || !errors.Is(&timeoutError{}, ErrTimeout) {
		t.Fatalf("timeout: %q", got)
	}
}
