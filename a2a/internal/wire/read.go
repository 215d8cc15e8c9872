package wire

import (
	"strconv"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/jsonw"
)

// The readers of what both versions' params hold in the same places, with
// the version's own shapes passed in.

// Parts reads the required, non-empty "parts" array of msg, the message
// at path, each element an object read by part (a closure over c, as
// Read's is).
func (c *Checker) Parts(path string, msg jsonw.Members, part func(path string, m jsonw.Members) a2a.Part) []a2a.Part {
	raw := msg.Get("parts")
	switch t := jsonw.TypeOf(raw); {
	case jsonw.Absent(raw):
		c.Add(path+"/parts", "is required")
		return nil
	case t != jsonw.Array:
		c.Add(path+"/parts", "must be an array, not "+jsonw.Article(t))
		return nil
	}
	list := jsonw.ArrayElements(raw)
	if len(list) == 0 {
		c.Add(path+"/parts", "must not be empty")
	}
	parts := make([]a2a.Part, 0, len(list))
	for i, pr := range list {
		pp := path + "/parts/" + strconv.Itoa(i)
		if pm := c.Object(pp, pr, true); pm != nil {
			parts = append(parts, part(pp, pm))
		}
	}
	return parts
}

// PushConfig reads the members both versions' push configs have: id,
// url (required; also non-empty when nonEmptyURL), token and
// authentication, whose schemes are read by schemes (a closure over c)
// and whose credentials follow them. URL, token and credentials are
// capped, as the id is (a2a.MaxIDBytes).
func (c *Checker) PushConfig(path string, m jsonw.Members, nonEmptyURL bool, schemes func(path string, auth jsonw.Members) []string) a2a.PushConfig {
	var pc a2a.PushConfig
	pc.ID, _ = c.ID(path+"/id", m.Get("id"), false)
	if nonEmptyURL {
		pc.URL = c.NonEmpty(path+"/url", m.Get("url"), true)
	} else {
		pc.URL, _ = c.Str(path+"/url", m.Get("url"), true)
	}
	c.MaxLen(path+"/url", pc.URL, a2a.MaxPushURLBytes)
	pc.Token, _ = c.Str(path+"/token", m.Get("token"), false)
	c.MaxLen(path+"/token", pc.Token, a2a.MaxPushTokenBytes)
	if a := c.Object(path+"/authentication", m.Get("authentication"), false); a != nil {
		auth := a2a.PushAuth{Schemes: schemes(path+"/authentication", a)}
		auth.Credentials, _ = c.Str(path+"/authentication/credentials", a.Get("credentials"), false)
		c.MaxLen(path+"/authentication/credentials", auth.Credentials, a2a.MaxPushCredentialsBytes)
		pc.Authentication = &auth
	}
	return pc
}
