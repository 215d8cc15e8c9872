// Package httpx holds what every HTTP binding of a2ad shares on Echo: GET
// routes that answer HEAD too, and the cross-origin (CORS) policy.
package httpx
