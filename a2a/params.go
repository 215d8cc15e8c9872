package a2a

import "time"

// The params of the JSON-RPC methods, as both codecs (packages a2a/v03 and
// a2a/v1) decode them: the task service never sees which version a call
// came in.

// SendParams are the params of message/send and SendMessage (0.3
// MessageSendParams, 1.0 SendMessageRequest).
type SendParams struct {
	Message Message
	// Blocking is configuration.blocking; nil means unset (blocking).
	Blocking *bool
	// HistoryLength is configuration.historyLength; nil means unset.
	HistoryLength       *int
	AcceptedOutputModes []string
	// PushConfig is configuration.pushNotificationConfig, or nil.
	PushConfig *PushConfig
	Metadata   map[string]any
}

// TaskQuery are the params of tasks/get and GetTask.
type TaskQuery struct {
	ID            string
	HistoryLength *int
}

// TaskIDParams are the params of a method that names one task
// (tasks/cancel, tasks/resubscribe and their 1.0 names).
type TaskIDParams struct {
	ID       string
	Metadata map[string]any
}

// The longest identifiers a caller chooses, in bytes: a message's
// messageId, contextId, taskId and each of its referenceTaskIds, a push
// config's id, the task and context ids a request names, and each key of
// a metadata object (the top-level keys: the values are payload). Every
// binding's decoder refuses a longer one with -32602 naming the field,
// before anything is stored.
//
// 256 bytes is seven UUIDs: room for any id scheme in use (UUIDs are 36
// bytes, ULIDs 26, prefixed or composite ids rarely pass 100), while the
// stores' keys built from them (owner and message id, task and config
// id) stay far under bbolt's 32 KiB key limit and PostgreSQL's 2,704-byte
// btree row limit, and what a task's records repeat stays small.
const (
	MaxIDBytes          = 256
	MaxMetadataKeyBytes = 256
)

// The longest push config strings a2ad takes, in bytes: each is stored
// with the task and sent with every notification.
const (
	MaxPushURLBytes         = 2 << 10
	MaxPushTokenBytes       = 4 << 10
	MaxPushCredentialsBytes = 4 << 10
)

// The longest lists of names a caller sends, and their longest names:
// a push config's authentication schemes, a message's extensions and a
// send's acceptedOutputModes. Each is stored with the task (and the
// schemes read back with every push config read), so an uncapped list
// made every read of its task cost what the caller chose.
const (
	MaxPushSchemes     = 8
	MaxPushSchemeBytes = 64
	MaxListNames       = 32  // extensions, acceptedOutputModes
	MaxNameBytes       = 256 // each of them: a URI or a media type
)

// PushConfigParams are the params of the push config methods: the task,
// a config id (get, delete) and the config (set).
type PushConfigParams struct {
	TaskID   string
	ConfigID string
	Config   PushConfig
}

// Page sizes of tasks/list and ListTasks.
const (
	DefaultListPageSize = 50
	MaxListPageSize     = 100
)

// The problems of a page token, as the list methods report them under
// the token's field (/page_token in 0.3, /pageToken in 1.0).
const (
	PageTokenMalformed  = "is not a page token this server issued"
	PageTokenOtherQuery = "was issued for another query (other filters or another caller)"
)

// ListTasksParams are the params of tasks/list (the a2a-go 0.3 extension)
// and of ListTasks (1.0).
type ListTasksParams struct {
	ContextID string
	// Status keeps the tasks in that state; "" keeps all.
	Status TaskState
	// PageSize is 1 to MaxListPageSize; 0 means unset (the default).
	PageSize  int
	PageToken string
	// HistoryLength is nil when unset (all history).
	HistoryLength *int
	// StatusTimestampAfter keeps the tasks whose status timestamp is at
	// or after it; nil keeps all. (0.3 last_updated_after.)
	StatusTimestampAfter *time.Time
	IncludeArtifacts     bool
}

// ListTasksResult is a page of tasks/list or ListTasks.
type ListTasksResult struct {
	Tasks         []Task
	TotalSize     int
	PageSize      int
	NextPageToken string
}
