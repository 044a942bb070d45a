package wire

import (
	"bytes"
	"math"
	"reflect"
	"testing"
)

// Response fuzz targets, one per family. The first input byte picks the
// type within the family, the rest is the body. Each target asserts that no
// decoder panics and that whatever decodes re-encodes to bytes that decode
// to the same value (after the canonicalisation the encoder applies:
// options sorted by key, permissions in ascending ids) and encode again to
// the same bytes.

var respFuzzFamilies = map[string][]func() Body{
	"streams": {
		func() Body { return new(StreamResponse) },
		func() Body { return new(StreamDetails) },
		func() Body { return new(Streams) },
	},
	"topics": {
		func() Body { return new(TopicHeader) },
		func() Body { return new(PartitionResponse) },
		func() Body { return new(TopicDetails) },
		func() Body { return new(Topics) },
	},
	"groups": {
		func() Body { return new(ConsumerGroupResponse) },
		func() Body { return new(ConsumerGroupMember) },
		func() Body { return new(ConsumerGroupDetails) },
		func() Body { return new(ConsumerGroups) },
		func() Body { return new(ConsumerOffset) },
		func() Body { return new(Assignment) },
	},
	"clients": {
		func() Body { return new(ClientResponse) },
		func() Body { return new(ConsumerGroupInfo) },
		func() Body { return new(ClientDetails) },
		func() Body { return new(Clients) },
	},
	"users": {
		func() Body { return new(UserResponse) },
		func() Body { return new(UserDetails) },
		func() Body { return new(Users) },
		func() Body { return new(LoginRegisterResponse) },
		func() Body { return new(PatEntry) },
		func() Body { return new(PersonalAccessTokens) },
		func() Body { return new(RawToken) },
	},
	"system": {
		func() Body { return new(Stats) },
		func() Body { return new(CacheMetric) },
		func() Body { return new(ClusterMetadata) },
		func() Body { return new(ClusterNode) },
		func() Body { return new(OptionCatalog) },
		func() Body { return new(OptionDescriptor) },
	},
}

// respFuzzSeeds adds every hand-written vector of the family, prefixed by
// its type's selector byte.
func respFuzzSeeds(f *testing.F, family string) {
	kinds := respFuzzFamilies[family]
	for _, v := range respVectors() {
		for i, k := range kinds {
			if reflect.TypeOf(k()) == reflect.TypeOf(v.want) {
				f.Add(append([]byte{byte(i)}, respUnhex(v.hex)...))
			}
		}
	}
	for i := range kinds {
		f.Add([]byte{byte(i)})
	}
}

func respFuzz(f *testing.F, family string) {
	respFuzzSeeds(f, family)
	kinds := respFuzzFamilies[family]
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		newBody := kinds[int(in[0])%len(kinds)]
		first := newBody()
		if err := first.Decode(in[1:]); err != nil {
			return
		}
		enc := first.AppendTo(nil)
		second := newBody()
		if err := second.Decode(enc); err != nil {
			t.Fatalf("%T: re-encoding %x does not decode: %v", first, enc, err)
		}
		if again := second.AppendTo(nil); !bytes.Equal(again, enc) {
			t.Fatalf("%T: encoding is not stable:\n%x\n%x", first, enc, again)
		}
		if a, b := respCanonical(first), respCanonical(second); !reflect.DeepEqual(a, b) {
			t.Fatalf("%T: round trip changed the value:\n%+v\n%+v", first, a, b)
		}
	})
}

// respCanonical returns a copy of v as the encoder sees it: options sorted
// by key, permission sets without their decoded order, NaN floats replaced
// by a fixed value (NaN != NaN; bit equality is checked on the bytes).
func respCanonical(v Body) Body {
	out := reflect.New(reflect.TypeOf(v).Elem())
	out.Elem().Set(reflect.ValueOf(v).Elem())
	respCanonicalValue(out.Elem())
	return respNormalize(out.Interface().(Body))
}

var (
	respOptionsType     = reflect.TypeOf(Options(nil))
	respPermissionsType = reflect.TypeOf((*Permissions)(nil))
)

func respCanonicalValue(v reflect.Value) {
	switch {
	case v.Type() == respOptionsType:
		if v.Len() > 0 {
			v.Set(reflect.ValueOf(v.Interface().(Options).Sorted()))
		}
		return
	case v.Type() == respPermissionsType:
		if !v.IsNil() {
			p := *v.Interface().(*Permissions)
			p.order, p.topicOrder = nil, nil
			v.Set(reflect.ValueOf(&p))
		}
		return
	}
	switch v.Kind() {
	case reflect.Float32:
		if math.IsNaN(v.Float()) {
			v.SetFloat(0)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				respCanonicalValue(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 || v.Type().Elem().Kind() == reflect.Uint32 {
			return
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(c, v)
		for i := 0; i < c.Len(); i++ {
			respCanonicalValue(c.Index(i))
		}
		v.Set(c)
	}
}

func FuzzResponseStreams(f *testing.F) { respFuzz(f, "streams") }
func FuzzResponseTopics(f *testing.F)  { respFuzz(f, "topics") }
func FuzzResponseGroups(f *testing.F)  { respFuzz(f, "groups") }
func FuzzResponseClients(f *testing.F) { respFuzz(f, "clients") }
func FuzzResponseUsers(f *testing.F)   { respFuzz(f, "users") }
func FuzzResponseSystem(f *testing.F)  { respFuzz(f, "system") }

// TestResponseFuzzCanonical checks the fuzz oracle itself: an unsorted
// options block and an out-of-order permission block decode, re-encode
// canonically, and compare equal after canonicalisation, while a real
// difference is still seen.
func TestResponseFuzzCanonical(t *testing.T) {
	unsorted := respSplice(respHexStreamS1, 35, "18 00 00 00  02 01 00 00 00 62 02 01 00 00 00 78  02 01 00 00 00 61 09 01 00 00 00 07")
	var a, b StreamResponse
	if err := a.Decode(unsorted); err != nil {
		t.Fatal(err)
	}
	if err := b.Decode(a.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(a, b) {
		t.Fatal("test premise: the unsorted block should decode in its own order")
	}
	if !reflect.DeepEqual(respCanonical(&a), respCanonical(&b)) {
		t.Fatal("canonical forms differ")
	}
	b.Options[0].Value = []byte{8}
	if reflect.DeepEqual(respCanonical(&a), respCanonical(&b)) {
		t.Fatal("canonicalisation hides a changed value")
	}
	nan := Stats{CPUUsage: float32(math.NaN())}
	if !reflect.DeepEqual(respCanonical(&nan), respCanonical(&nan)) {
		t.Fatal("NaN not canonicalised")
	}
}
