// Package agentcard builds the agent card a2ad serves at
// /.well-known/agent-card.json from the functions the exposure policy lets
// a viewer see. A card is built once per catalogue version and view, and
// carries its own ETag.
package agentcard
