package a2a

import (
	"strconv"
	"strings"
)

// Version is an A2A protocol version that a2ad speaks. The zero value is
// V03, which is what a request without A2A-Version means.
type Version uint8

// The versions a2ad speaks.
const (
	V03 Version = iota // 0.3: slash method names, "kind", lower-case enums
	V10                // 1.0: PascalCase methods, ProtoJSON
)

// VersionHeader is the HTTP header (and query parameter) a 1.0 client
// names its version with.
const VersionHeader = "A2A-Version"

// String returns v as A2A-Version writes it: "0.3" or "1.0".
func (v Version) String() string {
	switch v {
	case V03:
		return "0.3"
	case V10:
		return "1.0"
	}
	return "Version(" + strconv.Itoa(int(v)) + ")"
}

// maxEchoedVersion caps how much of a refused A2A-Version value goes back
// in the error's data.
const maxEchoedVersion = 32

// ParseVersion reads an A2A-Version value, Major.Minor: "" (absent) and
// "0.3" are V03, "1.0" is V10. Surrounding spaces are ignored. A patch
// number "MUST NOT be sent or considered": one that is sent anyway
// ("1.0.1", "0.3.0", which is what 0.3 cards call their version) is
// ignored, so it names its Major.Minor. Anything else, including "1",
// "v1.0", "1.0.x" and versions a2ad does not speak such as "1.1", gives
// ErrVersionNotSupported with data {"version": the value (at most 32
// bytes of it), "supported": "0.3, 1.0"}.
func ParseVersion(s string) (Version, *Error) {
	v := strings.TrimSpace(s)
	if major, rest, ok := strings.Cut(v, "."); ok {
		minor, patch, hasPatch := strings.Cut(rest, ".")
		if !hasPatch || (patch != "" && strings.Trim(patch, "0123456789") == "") {
			switch major + "." + minor {
			case "0.3":
				return V03, nil
			case "1.0":
				return V10, nil
			}
		}
	} else if v == "" {
		return V03, nil
	}
	return V03, UnsupportedVersion(s, "0.3, 1.0")
}

// UnsupportedVersion is the ErrVersionNotSupported of a request that
// asked for version asked of an endpoint that speaks supported (such as
// "1.0" for a binding that speaks only 1.0): data {"version": at most 32
// bytes of asked, "supported": supported}.
func UnsupportedVersion(asked, supported string) *Error {
	if len(asked) > maxEchoedVersion {
		asked = asked[:maxEchoedVersion]
	}
	return ErrVersionNotSupported.WithData(map[string]any{"version": asked, "supported": supported})
}
