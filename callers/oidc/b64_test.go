package oidc_test

import (
	"encoding/base64"
	"encoding/json"
)

func b64JSON(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}
