// Package jsonmodel is the JSON form of the Iggy models (docs/spec/http.md
// section 4 and the request bodies of sections 3, 5 and 6): Go types whose
// encoding/json output is byte for byte what the reference server writes
// (field names and order, null for absent optionals, human byte sizes, u128
// message ids as bare numbers, base64 payloads, permission maps keyed by
// decimal ids in ascending order), conversions from the binary wire types
// (From*), and decoders for the request bodies that apply the reference's
// acceptance rules (Decode*).
//
// It depends on package wire only: no HTTP. plane/http renders every reply
// with it; the SDK's HTTP transport (package client) decodes replies with
// it; a CLI's --output json can use the From* conversions and
// encoding/json directly:
//
//	details, _ := c.GetStream(ctx, wire.ID(0))
//	out, _ := json.Marshal(jsonmodel.FromStreamDetails(*details))
//
// Decoders return a *BodyError whose Syntax field says whether the body
// was not JSON at all (the reference answers 400) or did not fit the model
// (422, http.md 7.5).
//
// Choices where the spec leaves room (http.md 10 recommendations taken):
//   - a message "id": null is absent (#13); missing create-topic typed
//     fields and a missing partitioning "value" are "not set" (#14, 6.2);
//   - header values are stored as given, unchecked against their kind (#22);
//   - unknown fields are ignored except at the top level of the send body
//     (#23); duplicate keys are not detected (encoding/json keeps the last),
//     a leniency no first-party SDK can observe;
//   - a header key's kind must be "string" or "raw": protocol 0.11 keys are
//     String TLV fields, so other key kinds are refused (422);
//   - byte sizes are written in the largest decimal or binary unit in which
//     the value is exact with at most three fractional digits (0.1).
package jsonmodel
