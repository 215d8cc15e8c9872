package a2a

import (
	"errors"
)

// The core types still marshal to their 0.3 wire shapes through
// encoding/json, for the tests of tasks and tasks/boltstore that write
// what older stores held with json.Marshal (the schema 4 layout, the
// output parts of TestOutputParts, a benchmark's idempotency key). Nothing
// else relies on it: the store has its own record codec, and the codecs
// are packages a2a/v03 and a2a/v1. The 0.3 encoder lives in a2a/v03, which
// imports this package, so it sets Encode03 when it is linked in. This
// goes when those tests write their JSON themselves.

// Encode03 appends the 0.3 JSON of v, a pointer to a core value; package
// a2a/v03 sets it.
var Encode03 func(dst []byte, v any) ([]byte, error)

func marshal03(v any) ([]byte, error) {
	if Encode03 == nil {
		return nil, errors.New("a2a: the 0.3 encoder is not linked in (import a2a/v03)")
	}
	return Encode03(nil, v)
}

// MarshalJSON writes the 0.3 shape, with its kind discriminator.
func (p Part) MarshalJSON() ([]byte, error) { return marshal03(&p) }

// MarshalJSON writes the 0.3 shape, with its kind discriminator.
func (m Message) MarshalJSON() ([]byte, error) { return marshal03(&m) }

// MarshalJSON writes the 0.3 shape.
func (s TaskStatus) MarshalJSON() ([]byte, error) { return marshal03(&s) }

// MarshalJSON writes the 0.3 shape.
func (a Artifact) MarshalJSON() ([]byte, error) { return marshal03(&a) }

// MarshalJSON writes the 0.3 shape, with its kind discriminator.
func (t Task) MarshalJSON() ([]byte, error) { return marshal03(&t) }

// MarshalJSON writes the 0.3 shape, with its kind discriminator.
func (e StatusUpdateEvent) MarshalJSON() ([]byte, error) { return marshal03(&e) }

// MarshalJSON writes the 0.3 shape, with its kind discriminator.
func (e ArtifactUpdateEvent) MarshalJSON() ([]byte, error) { return marshal03(&e) }
