package conformance

import (
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strings"
	"time"
	"unicode"

	"drover/coord/id"
	"drover/net/wire"
)

// meaning renders a decoded message as the language-neutral JSON object
// the vectors carry (README.md, "Decoded meaning"): field names in
// snake_case, durations as integer milliseconds with an _ms suffix, byte
// strings and fingerprints in lower-case hex, keys as {crawler, processor,
// url}, headers as [[name, value], ...], enumerations and codes as their
// numbers, and the body of a JSON command as the JSON value itself.
func meaning(m wire.Message) map[string]any {
	v := reflect.ValueOf(m).Elem()
	out := map[string]any{}
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if f.Name == "Req" {
			continue
		}
		if strings.HasPrefix(f.Type.PkgPath(), "drover/admin") {
			b, err := json.Marshal(v.Field(i).Interface())
			if err != nil {
				panic(err)
			}
			var body any
			if err := json.Unmarshal(b, &body); err != nil {
				panic(err)
			}
			out["body"] = body
			continue
		}
		name, val := field(f.Name, v.Field(i))
		out[name] = val
	}
	return out
}

var (
	durationType    = reflect.TypeOf(time.Duration(0))
	fingerprintType = reflect.TypeOf(id.Fingerprint{})
	keyType         = reflect.TypeOf(id.Key{})
	headersType     = reflect.TypeOf(wire.Headers{})
	bytesType       = reflect.TypeOf([]byte(nil))
)

func field(goName string, v reflect.Value) (string, any) {
	name := snake(goName)
	if name == "msg" {
		name = "message"
	}
	if v.Type() == durationType {
		return name + "_ms", v.Interface().(time.Duration).Milliseconds()
	}
	return name, value(v)
}

func value(v reflect.Value) any {
	switch t := v.Type(); {
	case t == fingerprintType:
		f := v.Interface().(id.Fingerprint)
		return hex.EncodeToString(f[:])
	case t == bytesType:
		return hex.EncodeToString(v.Bytes())
	case t == keyType:
		k := v.Interface().(id.Key)
		return map[string]any{"crawler": k.Crawler, "processor": k.Processor, "url": k.URL}
	case t == headersType:
		out := []any{}
		for _, h := range v.Interface().(wire.Headers) {
			out = append(out, []any{h.Name, h.Value})
		}
		return out
	}
	switch v.Kind() {
	case reflect.Bool:
		return v.Bool()
	case reflect.String:
		return v.String()
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint()
	case reflect.Int, reflect.Int64:
		return v.Int()
	case reflect.Slice:
		out := []any{}
		for i := 0; i < v.Len(); i++ {
			out = append(out, value(v.Index(i)))
		}
		return out
	case reflect.Struct:
		out := map[string]any{}
		for i := 0; i < v.NumField(); i++ {
			name, val := field(v.Type().Field(i).Name, v.Field(i))
			out[name] = val
		}
		return out
	}
	panic("conformance: no neutral form for " + v.Type().String())
}

// snake turns a Go name into snake_case: JobID -> job_id, JobIDs ->
// job_ids, ReadOnly -> read_only, MaxBody -> max_body, TTL -> ttl.
func snake(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "IDs", "Ids"), "ID", "Id")
	s = strings.ReplaceAll(s, "TTL", "Ttl")
	var b strings.Builder
	for i, c := range s {
		if unicode.IsUpper(c) {
			if i > 0 {
				b.WriteByte('_')
			}
			c = unicode.ToLower(c)
		}
		b.WriteRune(c)
	}
	return b.String()
}
