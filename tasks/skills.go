package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/functions"
)

// skills is what the catalogue in force offers a caller, as the policy
// decides it for the caller's protocol: the decision on a call, the
// list, the default skill, the hint of a message that names none.
type skills struct {
	catalog func() *functions.Catalog
	policy  exposure.Policy
	log     zerolog.Logger
}

// authorize asks the policy, at call time, whether caller may call id
// over its protocol. It returns the policy's reason and the function, or
// the text of a denial. Unknown and unexposed functions get the same
// text, so that callers cannot probe what exists.
func (sk *skills) authorize(caller Caller, id string) (*functions.Function, exposure.Reason, string) {
	fn, d := sk.decide(caller, id)
	if d.Exposed {
		return fn, d.Reason, ""
	}
	ev := sk.log.Info()
	if d.Reason == exposure.CatalogError {
		ev = sk.log.Error()
	}
	if d.Reason == exposure.UnknownFunction {
		// Not an id of ours but whatever the caller sent: log its size,
		// never its text.
		ev = ev.Int("function_id_bytes", len(id))
	} else {
		ev = ev.Str("function_id", id)
	}
	ev.Str("caller", caller.ID).Str("reason", string(d.Reason)).Msg("call denied")
	if d.Reason == exposure.HiddenPrefix {
		return nil, d.Reason, fmt.Sprintf("Function '%s' is in a reserved namespace and is never exposed as an A2A skill", id)
	}
	return nil, d.Reason, fmt.Sprintf("Function '%s' is not an available skill", id)
}

// decide is the policy's decision on a call of id by caller over its
// protocol, and the function when there is one.
func (sk *skills) decide(caller Caller, id string) (*functions.Function, exposure.Decision) {
	cat := sk.catalog()
	var fn *functions.Function
	d := sk.policy.CheckIn(caller.protocol(), id, caller.Tiers, func(id string) (map[string]any, bool, error) {
		if cat == nil {
			return nil, false, errors.New("no catalogue loaded")
		}
		f, ok := cat.Lookup(id)
		if !ok {
			return nil, false, nil
		}
		fn = f
		return f.Metadata, true, nil
	})
	return fn, d
}

// Skills lists the functions caller may call over its protocol, in
// catalogue order.
func (s *Service) Skills(caller Caller) []*functions.Function { return s.sk.list(caller) }

// list lists the functions caller may call over its protocol, in
// catalogue order.
func (sk *skills) list(caller Caller) []*functions.Function {
	cat := sk.catalog()
	if cat == nil {
		return nil
	}
	var out []*functions.Function
	for _, f := range cat.Functions {
		if sk.policy.DecideIn(caller.protocol(), f.ID, f.Metadata, caller.Tiers).Exposed {
			out = append(out, f)
		}
	}
	return out
}

func validateInput(fn *functions.Function, input json.RawMessage) error {
	if fn.Input == nil {
		return nil
	}
	problems := fn.Input.Validate(input)
	if len(problems) == 0 {
		return nil
	}
	list := make([]a2a.Problem, len(problems))
	for i, p := range problems {
		list[i] = a2a.Problem{Path: p.Path, Message: p.Message}
	}
	return &InputError{Skill: fn.ID, Problems: list}
}

// skillsHint is the status message of a task that waits for a message
// naming a skill.
func (sk *skills) hint(caller Caller, taskID, contextID string) *a2a.Message {
	skills := sk.list(caller)
	ids := make([]string, len(skills))
	list := make([]map[string]any, len(skills))
	for i, f := range skills {
		ids[i] = f.ID
		list[i] = map[string]any{"id": f.ID, "name": f.Name, "description": f.Description}
	}
	example := "<skill id>"
	if len(ids) > 0 {
		example = ids[0]
	}
	text := fmt.Sprintf("No skill named. Send a message with taskId %q and a data part "+
		`{"skill": %q, "input": {...}}, or text that starts with the skill id. Skills you may use: %s.`,
		taskID, example, strings.Join(ids, ", "))
	if len(ids) == 0 {
		text = "No skill named, and no skills are available to you."
	}
	data, _ := json.Marshal(map[string]any{"skills": list})
	m := agentText(taskID, contextID, text)
	m.Parts = append(m.Parts, a2a.DataPart(data))
	return m
}
