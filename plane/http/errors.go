package httpplane

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"iggynode/wire"
	"iggynode/wire/jsonmodel"
)

// apiError is an error response: a status and the body of 7.1.
type apiError struct {
	status int
	body   jsonmodel.ErrorBody
}

// statusOf maps an IggyError code to its HTTP status (http.md 7.2).
func statusOf(c wire.ErrorCode) int {
	switch c {
	case wire.ErrResourceNotFound, wire.ErrClientNotFound, wire.ErrStreamIdNotFound, wire.ErrTopicIdNotFound,
		wire.ErrPartitionNotFound, wire.ErrConsumerOffsetNotFound, wire.ErrSegmentNotFound, wire.ErrConsumerGroupIdNotFound,
		wire.ErrConsumerGroupNameNotFound, wire.ErrConsumerGroupMemberNotFound, wire.ErrStreamNameNotFound, wire.ErrTopicNameNotFound:
		return http.StatusNotFound
	case wire.ErrUnauthenticated, wire.ErrInvalidPersonalAccessToken, wire.ErrAccessTokenMissing, wire.ErrInvalidAccessToken:
		return http.StatusUnauthorized
	case wire.ErrUnauthorized:
		return http.StatusForbidden
	case wire.ErrTransientNotCommitted, wire.ErrTransientNotAccepted, wire.ErrCannotEstablishConnection:
		return http.StatusServiceUnavailable
	case wire.ErrInvalidClientId:
		return http.StatusConflict
	}
	return http.StatusBadRequest
}

// typed is the error body of code c with its status.
func typed(c wire.ErrorCode) *apiError {
	return &apiError{status: statusOf(c), body: jsonmodel.Error(c, "")}
}

// handBuilt errors of 7.4.
func handBuilt(status int, code, reason string) *apiError {
	return &apiError{status: status, body: jsonmodel.HandBuilt(uint32(status), code, reason)}
}

var (
	errGeneric404      = handBuilt(http.StatusNotFound, "not_found", "Resource not found")
	errMissingToken    = typed(wire.ErrAccessTokenMissing)
	errUnauthenticated = typed(wire.ErrUnauthenticated)
	errUnavailable     = typed(wire.ErrCannotEstablishConnection)
)

// writeJSON writes v with status, HTML characters unescaped as serde does.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		writeError(w, typed(wire.ErrInvalidCommand))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()-1))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes()[:buf.Len()-1])
}

func writeError(w http.ResponseWriter, e *apiError) {
	// Error responses never carry iggy-view (2.5).
	w.Header().Del(viewHeader)
	if e.status == http.StatusServiceUnavailable || e.status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, e.status, e.body)
}

// plainText is a framework rejection (7.5).
func plainText(w http.ResponseWriter, status int, msg string) {
	w.Header().Del(viewHeader)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg))
}

const viewHeader = "Iggy-View"
