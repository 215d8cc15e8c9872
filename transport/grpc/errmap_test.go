package grpc_test

import (
	"context"
	"testing"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc/codes"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/transport/transporttest"
)

// TestErrorMapping: each error of the spec's table (and a2ad's own)
// answers with its gRPC status code and message, and the ErrorInfo with
// its reason and domain first in the details.
func TestErrorMapping(t *testing.T) {
	var answer *a2a.Error
	client, _ := serve(t, &transporttest.Service{GetFn: func(string, *int) (*a2a.Task, error) { return nil, answer }})
	for _, c := range transporttest.ErrorCases {
		answer = c.Err
		_, err := client.GetTask(context.Background(), &a2apb.GetTaskRequest{Id: "t1"})
		checkStatus(t, c.Reason, err, codes.Code(c.GRPC), c.Err.Message, c.Reason, c.Domain)
	}
}
