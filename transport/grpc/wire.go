package grpc

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// wireCodec is the server's codec: grpc-go's proto codec, but its
// messages marshalled deterministically. An event's metadata and a
// data part are google.protobuf.Struct, whose fields are a map that Go
// marshals in random order by default: two subscribers of one task
// would get the same event in different bytes, and a client that
// compares or hashes events (a cache, a signature, a test of two
// streams) would see them differ.
type wireCodec struct{ dflt encoding.CodecV2 }

var _ encoding.CodecV2 = wireCodec{}

func newWireCodec() wireCodec { return wireCodec{dflt: encoding.GetCodecV2(protocodec.Name)} }

// Marshal writes v deterministically, in a pooled buffer when it is
// large, as grpc-go's codec does.
func (c wireCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("proto: failed to marshal, message is %T, want proto.Message", v)
	}
	// Size first: UseCachedSize reuses what it computed.
	size := proto.Size(m)
	opts := proto.MarshalOptions{Deterministic: true, UseCachedSize: true}
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := opts.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(size)
	if _, err := opts.MarshalAppend((*buf)[:0], m); err != nil {
		pool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

// Unmarshal reads as grpc-go's codec does.
func (c wireCodec) Unmarshal(data mem.BufferSlice, v any) error { return c.dflt.Unmarshal(data, v) }

// Name is the codec's content subtype, the default codec's.
func (c wireCodec) Name() string { return protocodec.Name }
