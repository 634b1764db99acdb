package store

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// canonical is what the SQLite backend writes: json.Marshal of the calls.
func canonical(t testing.TB, calls []ToolCall) string {
	t.Helper()
	b, err := json.Marshal(calls)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDecodeToolCallsMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		fast bool // whether the fast path must take it
	}{
		{"one call", canonical(t, []ToolCall{{ID: "call_1", Type: "function", Function: ToolFunction{Name: "read_file", Arguments: `{"path":"src/main.go"}`}}}), true},
		{"three calls", canonical(t, []ToolCall{
			{ID: "a", Type: "function", Function: ToolFunction{Name: "x", Arguments: "{}"}},
			{ID: "b", Type: "function", Function: ToolFunction{Name: "y", Arguments: `{"q":"<b>&amp;</b>"}`}},
			{ID: "c", Type: "function", Function: ToolFunction{Name: "z", Arguments: "{\"t\":\"line\\nnext\\ttab \u2028 é 中文 😀\"}"}},
		}), true},
		{"empty fields", canonical(t, []ToolCall{{}}), true},
		{"empty array", `[]`, true},
		{"whitespace and key order", " [ { \"function\" : { \"arguments\" : \"{}\" , \"name\" : \"n\" } , \"type\" : \"function\" , \"id\" : \"i\" } ] ", true},
		{"unicode escape", `[{"id":"\u00e9\u4e2d","type":"function","function":{"name":"n","arguments":""}}]`, true},
		{"null", `null`, true},
		{"surrogate pair goes to encoding/json", `[{"id":"\ud83d\ude00","type":"","function":{"name":"","arguments":""}}]`, false},
		{"lone surrogate", `[{"id":"\ud83d","type":"","function":{"name":"","arguments":""}}]`, false},
		{"escaped slash", `[{"id":"a\/b","type":"","function":{"name":"","arguments":""}}]`, false},
		{"other case key", `[{"ID":"x"}]`, false},
		{"unknown key", `[{"id":"x","index":0}]`, false},
		{"null value", `[{"id":null}]`, false},
		{"invalid utf-8", "[{\"id\":\"a\xffb\"}]", false},
		{"not json", `[{"id":`, false},
		{"trailing garbage", `[] x`, false},
		{"object not array", `{"id":"x"}`, false},
		{"raw control char", "[{\"id\":\"a\nb\"}]", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if _, ok := decodeCanonicalCalls(c.in); ok != c.fast {
				t.Errorf("fast path took it: %v, want %v", ok, c.fast)
			}
			got, gotErr := DecodeToolCalls(c.in)
			var want []ToolCall
			wantErr := json.Unmarshal([]byte(c.in), &want)
			if (gotErr != nil) != (wantErr != nil) {
				t.Fatalf("error %v, encoding/json says %v", gotErr, wantErr)
			}
			if wantErr == nil && !reflect.DeepEqual(got, want) {
				t.Errorf("got %#v\nwant %#v", got, want)
			}
		})
	}
}

// Strings without escapes share the stored text's memory: that is the point of the fast path.
func TestDecodeToolCallsSharesUnescapedStrings(t *testing.T) {
	t.Parallel()
	in := canonical(t, []ToolCall{{ID: "call_1", Type: "function", Function: ToolFunction{Name: "terminal", Arguments: "{}"}}})
	calls, err := DecodeToolCalls(in)
	if err != nil || len(calls) != 1 {
		t.Fatal(calls, err)
	}
	id := calls[0].ID
	base, p := uintptr(unsafe.Pointer(unsafe.StringData(in))), uintptr(unsafe.Pointer(unsafe.StringData(id)))
	if p < base || p >= base+uintptr(len(in)) {
		t.Errorf("id %q was copied", id)
	}
}

func FuzzDecodeToolCalls(f *testing.F) {
	for _, s := range []string{
		`[]`, `null`, `[{"id":"a","type":"function","function":{"name":"n","arguments":"{\"k\":1}"}}]`,
		`[{"id":"\u00e9","type":"","function":{"name":"","arguments":""}},{}]`, `[{"ID":1}]`, `[{"id":"\ud83d\ude00"}]`,
		strings.Repeat(`[{"id":"x"},`, 3),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, gotErr := DecodeToolCalls(in)
		var want []ToolCall
		wantErr := json.Unmarshal([]byte(in), &want)
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("%q: error %v, encoding/json says %v", in, gotErr, wantErr)
		}
		if wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: got %#v, want %#v", in, got, want)
		}
	})
}
