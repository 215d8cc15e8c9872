package a2a

import (
	"encoding/json"
	"errors"
)

// The core types marshal to their 0.3 wire shapes through encoding/json,
// for the task store, whose records are still written that way. The 0.3
// encoder is package a2a/v03, which imports this package: it sets Encode03
// when it is linked in. This goes once the store has a record encoding of
// its own.

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

type wirePart struct {
	Kind     PartKind        `json:"kind"`
	Text     *string         `json:"text,omitempty"`
	File     *FileContent    `json:"file,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	Metadata map[string]any  `json:"metadata,omitempty"`
}

// UnmarshalJSON reads the 0.3 shape. It is lenient: strict checking of
// client input is done by the codecs' decoders, which name the offending
// field.
func (p *Part) UnmarshalJSON(b []byte) error {
	var w wirePart
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*p = Part{Kind: w.Kind, File: w.File, Data: w.Data, Metadata: w.Metadata}
	if w.Text != nil {
		p.Text = *w.Text
	}
	return nil
}
