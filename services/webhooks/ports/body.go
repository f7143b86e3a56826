package ports

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"

	"github.com/voiceai-platform/voiceai/pkg/httpx"
)

// decode reads a request body into dst (a pointer to a struct) as the
// operation's schema read it. The schema, checked at the edge, knows a
// member by its exact name; encoding/json also takes a member whose name
// differs only in case ("URL" for url, "Retry_Config" for retry_config),
// and the last of the two wins. Such a member, to the schema an unknown
// one it did not check, is left out here, as it is there, so that the
// handler gets the values the schema checked, never others.
func decode(r *http.Request, maxBytes int64, dst any) error {
	body, err := httpx.ReadBody(r, maxBytes)
	if err != nil {
		return err
	}
	return httpx.DecodeBytes(exactMembers(body, reflect.TypeOf(dst)), dst)
}

// exactMembers is raw without the members of its objects (nested ones
// too, as t's fields say) that encoding/json would take for one of t's
// fields although their name is not that field's exact JSON name. Raw
// that is not an object of t is left as it is, for the decoder to judge.
func exactMembers(raw []byte, t reflect.Type) []byte {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return raw
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return raw
	}
	fields := jsonFields(t)
	changed := false
	for name, v := range obj {
		if ft, ok := fields[name]; ok {
			if nv := exactMembers(v, ft); !bytes.Equal(nv, v) {
				obj[name], changed = nv, true
			}
			continue
		}
		for f := range fields {
			if strings.EqualFold(name, f) { // encoding/json's matching
				delete(obj, name)
				changed = true
				break
			}
		}
	}
	if !changed {
		return raw
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the data of an event is delivered as it came
	if enc.Encode(obj) != nil {
		return raw
	}
	return buf.Bytes()
}

// jsonFields are t's fields by their JSON names.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
