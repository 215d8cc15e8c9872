// Package exposure is the one policy that decides which functions a2ad
// publishes as skills and lets callers call. The agent card, message/send
// and the skills command all ask it, and it answers with a decision and a
// stable reason, so an operator can always tell why a function is hidden.
package exposure
