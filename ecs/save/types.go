package save

import (
	"fmt"
	"reflect"
	"strings"
	"unsafe"
)

// Type is a component of the game's own that saves keep, registered under
// a name and a version of the game's choosing: the name ties a saved
// column to the Go type across builds (rename the Go type freely, never
// the name), and the version says which shape of it the file holds. Make
// one with [Plain] or [Coded].
type Type struct {
	name    string
	version uint32
	typ     reflect.Type
	size    int    // bytes a value in the file; 0 for a coded type
	layout  string // the plain type's fields, for the type table
	err     error  // why the type cannot be saved, reported at registration
	// encode appends the coded value at p to dst; decode sets it from src.
	encode func(dst []byte, p unsafe.Pointer) []byte
	decode func(src []byte, p unsafe.Pointer) error
}

// Name returns the name the type is saved under.
func (t Type) Name() string { return t.name }

// Version returns the version the type is saved with.
func (t Type) Version() uint32 { return t.version }

// Err returns why the type cannot be saved, or nil: a name that is empty,
// too long or Throng's own, or a Plain type that holds pointers.
func (t Type) Err() error { return t.err }

func (t Type) coded() bool { return t.encode != nil }

// Codec turns a component of the game's own into bytes and back, for
// components that are not plain: with slices, strings, maps or pointers.
// Append must not keep dst or v; Decode must not keep src, and must
// return an error for bytes Append cannot have written.
type Codec[T any] interface {
	Append(dst []byte, v *T) []byte
	Decode(src []byte, v *T) error
}

// Plain registers T, a plain value (numbers, bools, arrays and structs of
// them: no pointers, slices, strings, maps, channels, functions or
// interfaces), saved as its bytes in memory. The file's type table keeps
// T's size and field layout; a file whose layout for name and version
// differs from T's is refused at load, so bump the version when T
// changes shape.
func Plain[T any](name string, version uint32) Type {
	rt := reflect.TypeFor[T]()
	t := typeOf[T](name, version)
	if why := notPlain(rt); why != "" {
		t.err = fmt.Errorf("save: type %q (%v) is not plain: %s; use save.Coded", name, rt, why)
	}
	t.size = int(rt.Size())
	t.layout = layoutOf(rt)
	return t
}

// Coded registers T, saved through codec: each value as the bytes
// codec.Append writes.
func Coded[T any](name string, version uint32, codec Codec[T]) Type {
	t := typeOf[T](name, version)
	t.layout = "coded"
	if codec == nil {
		t.err = fmt.Errorf("save: type %q: nil codec", name)
		return t
	}
	t.encode = func(dst []byte, p unsafe.Pointer) []byte { return codec.Append(dst, (*T)(p)) }
	t.decode = func(src []byte, p unsafe.Pointer) error { return codec.Decode(src, (*T)(p)) }
	return t
}

// maxNameLen bounds a type's name, which the type table stores with a
// one-byte length.
const maxNameLen = 255

func typeOf[T any](name string, version uint32) Type {
	t := Type{name: name, version: version, typ: reflect.TypeFor[T]()}
	switch {
	case name == "" || len(name) > maxNameLen:
		t.err = fmt.Errorf("save: type name %q: must be 1 to %d bytes", name, maxNameLen)
	case strings.HasPrefix(name, builtinPrefix):
		t.err = fmt.Errorf("save: type name %q: the prefix %q is Throng's own", name, builtinPrefix)
	}
	return t
}

// notPlain says why values of t cannot be saved as their bytes, or "".
func notPlain(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return ""
	case reflect.Array:
		return notPlain(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if why := notPlain(t.Field(i).Type); why != "" {
				return "field " + t.Field(i).Name + ": " + why
			}
		}
		return ""
	}
	return "holds a " + t.Kind().String()
}

// layoutOf describes t's memory layout: each field's name, offset and
// kind, nested fields in braces, so that a change of shape under the same
// version shows as a different string.
func layoutOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct:
		var b strings.Builder
		b.WriteByte('{')
		for i := range t.NumField() {
			f := t.Field(i)
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%s@%d:%s", f.Name, f.Offset, layoutOf(f.Type))
		}
		b.WriteByte('}')
		return b.String()
	case reflect.Array:
		return fmt.Sprintf("[%d]%s", t.Len(), layoutOf(t.Elem()))
	}
	return t.Kind().String()
}
