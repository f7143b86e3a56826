package adapters

import (
	"reflect"
	"testing"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// Every field of a summary but its words survives packing: a field added
// to app.ConversationSummary and not to packedSummary fails here.
func TestPackedSummaryKeepsEveryField(t *testing.T) {
	c := app.ConversationSummary{}
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(v.Type().Field(i).Name + "-value")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(1000 + i))
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"a", v.Type().Field(i).Name}))
		case reflect.Map:
			m := reflect.MakeMap(f.Type())
			val := reflect.ValueOf("v")
			if f.Type().Elem().Kind() == reflect.Float64 {
				val = reflect.ValueOf(2.5)
			}
			m.SetMapIndex(reflect.ValueOf("k"), val)
			f.Set(m)
		default:
			t.Fatalf("field %s of kind %s: teach this test and packedSummary", v.Type().Field(i).Name, f.Kind())
		}
	}
	x := NewConversationIndex()
	e := &convEntry{c: x.pack(c)}
	got := x.summaryOf(e)
	c.Words = nil // kept in the word lists, not the entry
	if !reflect.DeepEqual(got, c) {
		t.Fatalf("packed and back:\n got %+v\nwant %+v", got, c)
	}
}
