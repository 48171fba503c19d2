package throng

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// LoadOptions reads a settings document from r: one JSON object whose keys
// are the json tags of [Options] (see that type for each key). It is strict:
// an unknown key, a duplicate key, a value of the wrong type, a fractional
// count, a null, trailing data after the object, and anything
// [Options.Resolve] rejects are errors, each an [*OptionsError] naming the
// key's full path. Keys are case-sensitive; an unknown key that is close to
// a known one gets a "did you mean" hint. Keys left out take their
// defaults. Clamps are not errors: Resolve applies and reports them.
func LoadOptions(r io.Reader) (Options, error) {
	return loadOptions(r, "")
}

// LoadOptionsFile is [LoadOptions] on the file at path; its errors name the
// file as well as the key.
func LoadOptionsFile(path string) (Options, error) {
	f, err := os.Open(path)
	if err != nil {
		return Options{}, fmt.Errorf("throng: options: %w", err)
	}
	defer f.Close()
	return loadOptions(f, path)
}

func loadOptions(r io.Reader, file string) (Options, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Options{}, &OptionsError{File: file, Problem: err.Error()}
	}
	var o Options
	if e := decodeSettings(data, reflect.ValueOf(&o).Elem()); e != nil {
		e.File = file
		return Options{}, e
	}
	if _, _, errs := o.resolve(); len(errs) > 0 {
		return Options{}, joinOptionsErrors(errs, file)
	}
	return o, nil
}

// settingsDecoder walks a JSON document token by token against a Go type's
// json tags, which is what lets every error name the full key path (the
// standard decoder's DisallowUnknownFields names neither the path nor
// duplicates).
type settingsDecoder struct {
	data []byte
	dec  *json.Decoder
}

func decodeSettings(data []byte, dst reflect.Value) *OptionsError {
	if len(bytes.TrimSpace(data)) == 0 {
		return &OptionsError{Problem: "no settings: want a JSON object, such as {} for every default"}
	}
	d := settingsDecoder{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	if err := d.syntax(); err != nil {
		return err
	}
	d.dec.UseNumber()
	return d.value("", dst, false)
}

// syntax checks that the document is exactly one well-formed JSON value, so
// that the walk meets no syntax errors (json.Decoder reports their offsets
// relative to the value being read, not to the document).
func (d *settingsDecoder) syntax() *OptionsError {
	if json.Valid(d.data) {
		return nil
	}
	var syntax *json.SyntaxError
	if err := json.Unmarshal(d.data, new(json.RawMessage)); !errors.As(err, &syntax) {
		return &OptionsError{Problem: fmt.Sprintf("not valid JSON: %v", err)}
	}
	problem := syntax.Error()
	if strings.Contains(problem, "after top-level value") {
		problem = "unexpected data after the settings object"
	}
	// Offset counts the bytes read up to and including the offending one.
	return &OptionsError{Problem: d.position(syntax.Offset-1) + ": " + problem}
}

// position formats a byte offset of the document as "line L, column C",
// both counted from 1.
func (d *settingsDecoder) position(off int64) string {
	off = min(max(off, 0), int64(len(d.data)))
	before := d.data[:off]
	line := 1 + bytes.Count(before, []byte{'\n'})
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}

// token returns the next token of a document that syntax has checked.
func (d *settingsDecoder) token() (json.Token, *OptionsError) {
	tok, err := d.dec.Token()
	if err != nil {
		return nil, &OptionsError{Problem: fmt.Sprintf("not valid JSON: %v", err)}
	}
	return tok, nil
}

// value decodes the next JSON value into v. Inside a list entry (entry is
// true) objects must give every key: an entry has no defaults.
func (d *settingsDecoder) value(path string, v reflect.Value, entry bool) *OptionsError {
	if v.Kind() == reflect.Pointer {
		elem := reflect.New(v.Type().Elem())
		if err := d.value(path, elem.Elem(), entry); err != nil {
			return err
		}
		v.Set(elem)
		return nil
	}
	tok, err := d.token()
	if err != nil {
		return err
	}
	switch v.Kind() {
	case reflect.Struct:
		return d.object(path, v, tok, entry)
	case reflect.Slice:
		return d.list(path, v, tok)
	case reflect.String:
		str, ok := tok.(string)
		if !ok {
			return wrongType(path, "a string", tok)
		}
		v.SetString(str)
	case reflect.Bool:
		b, ok := tok.(bool)
		if !ok {
			return wrongType(path, "true or false", tok)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := tok.(json.Number)
		if !ok {
			return wrongType(path, "a number", tok)
		}
		i, problem := wholeNumber(n)
		if problem == "" && v.OverflowInt(i) {
			problem = fmt.Sprintf("%s is out of range", n)
		}
		if problem != "" {
			return &OptionsError{Key: path, Problem: problem}
		}
		v.SetInt(i)
	case reflect.Float32, reflect.Float64:
		n, ok := tok.(json.Number)
		if !ok {
			return wrongType(path, "a number", tok)
		}
		f, err := strconv.ParseFloat(string(n), v.Type().Bits())
		if err != nil {
			return &OptionsError{Key: path, Problem: fmt.Sprintf("%s is out of range", n)}
		}
		v.SetFloat(f)
	default:
		// A programming error in a new settings field, caught by the
		// round-trip test of testdata/full.json.
		panic(fmt.Sprintf("throng: options: %s is a %s, which LoadOptions cannot decode; teach settingsDecoder.value about it", path, v.Type()))
	}
	return nil
}

// wholeNumber parses n as an integer. 3, 3.0 and 3e0 are all 3; 2.5 is a
// problem.
func wholeNumber(n json.Number) (int64, string) {
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err == nil {
		return i, ""
	}
	f, ferr := strconv.ParseFloat(string(n), 64)
	switch {
	case ferr != nil || math.Abs(f) >= math.MaxInt64:
		return 0, fmt.Sprintf("%s is out of range", n)
	case f != math.Trunc(f):
		return 0, fmt.Sprintf("want a whole number, got %s", n)
	}
	return int64(f), ""
}

func (d *settingsDecoder) object(path string, v reflect.Value, tok json.Token, entry bool) *OptionsError {
	if tok != json.Delim('{') {
		return wrongType(path, "an object", tok)
	}
	fields := settingsFields(v.Type())
	seen := make([]bool, len(fields))
	for d.dec.More() {
		keyTok, err := d.token()
		if err != nil {
			return err
		}
		key := keyTok.(string) // the decoder only yields strings in key position
		keyPath := joinKey(path, key)
		i := slices.IndexFunc(fields, func(f settingsField) bool { return f.key == key })
		switch {
		case i < 0:
			return &OptionsError{Key: keyPath, Problem: unknownKey(path, key, fields)}
		case seen[i]:
			return &OptionsError{Key: keyPath, Problem: "duplicate key"}
		}
		seen[i] = true
		if err := d.value(keyPath, v.Field(fields[i].index), entry); err != nil {
			return err
		}
	}
	if _, err := d.token(); err != nil { // the closing brace
		return err
	}
	if entry {
		// A list entry's plain fields have no defaults; its pointers and
		// lists are optional, as everywhere else.
		for i, f := range fields {
			if k := v.Field(f.index).Kind(); !seen[i] && k != reflect.Pointer && k != reflect.Slice {
				return &OptionsError{Key: joinKey(path, f.key), Problem: "missing (a list entry has no defaults)"}
			}
		}
	}
	return nil
}

func (d *settingsDecoder) list(path string, v reflect.Value, tok json.Token) *OptionsError {
	if tok != json.Delim('[') {
		return wrongType(path, "a list", tok)
	}
	items := reflect.Zero(v.Type())
	for i := 0; d.dec.More(); i++ {
		item := reflect.New(v.Type().Elem()).Elem()
		if err := d.value(fmt.Sprintf("%s[%d]", path, i), item, true); err != nil {
			return err
		}
		items = reflect.Append(items, item)
	}
	if _, err := d.token(); err != nil { // the closing bracket
		return err
	}
	v.Set(items) // an empty list stays nil, which is what "empty" means
	return nil
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func wrongType(path, want string, tok json.Token) *OptionsError {
	var got string
	switch t := tok.(type) {
	case json.Delim:
		got = "object"
		if t == '[' {
			got = "list"
		}
	case string:
		if len(t) > 40 {
			t = t[:40] + "..."
		}
		got = "string " + strconv.Quote(t)
	case bool:
		got = "boolean " + strconv.FormatBool(t)
	case json.Number:
		got = "number " + t.String()
	case nil:
		got = "null"
	}
	return &OptionsError{Key: path, Problem: "want " + want + ", got " + got}
}

// settingsField is one key of a settings object: its json name and the Go
// field it fills.
type settingsField struct {
	key   string
	index int
	typ   reflect.Type
}

// settingsFields lists the keys of struct type t in field order. Every
// exported field must have a json key, so that no setting can be present in
// Go but unreachable from a settings file.
func settingsFields(t reflect.Type) []settingsField {
	fields := make([]settingsField, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Tag.Get("json") == "-" {
			continue // not a settings key: set from code only
		}
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if key == "" {
			panic(fmt.Sprintf("throng: options: field %s.%s has no json key; every settings field needs one", t.Name(), f.Name))
		}
		fields = append(fields, settingsField{key: key, index: i, typ: f.Type})
	}
	return fields
}

// unknownKey describes an unknown key, suggesting the closest known key at
// this level or one level down (a key put outside its section).
func unknownKey(path, key string, fields []settingsField) string {
	best, bestDist := "", 4
	consider := func(candidate, name string) {
		if dist := editDistance(strings.ToLower(key), strings.ToLower(name)); dist < bestDist && 2*dist < len(key) {
			best, bestDist = candidate, dist
		}
	}
	for _, f := range fields {
		consider(joinKey(path, f.key), f.key)
		if f.typ.Kind() == reflect.Struct {
			for _, sub := range settingsFields(f.typ) {
				consider(joinKey(joinKey(path, f.key), sub.key), sub.key)
			}
		}
	}
	if best == "" {
		return "unknown key"
	}
	return fmt.Sprintf("unknown key (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
