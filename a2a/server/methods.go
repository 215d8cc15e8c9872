package server

// methods are the JSON-RPC methods the endpoint knows, 0.3 names then
// 1.0 names. A method may be known and still be turned off (no stream or
// push service): it is answered, not "method not found".
var methods = []string{
	"message/send", "message/stream", "tasks/get", "tasks/cancel", "tasks/resubscribe", "tasks/list",
	"tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get",
	"tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete",
	"agent/getAuthenticatedExtendedCard",

	"SendMessage", "SendStreamingMessage", "GetTask", "CancelTask", "SubscribeToTask", "ListTasks",
	"CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig",
	"ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig", "GetExtendedAgentCard",
}

// Methods returns the names of the JSON-RPC methods the endpoint knows:
// a fixed set, unlike the method of a request, which the caller chooses.
func Methods() []string { return append([]string(nil), methods...) }
