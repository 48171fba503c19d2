package save

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	ark "github.com/mlange-42/ark/ecs"
)

// Carrying an actor's components of the game's own to another server (a
// zone hand-off, say) uses the types' save encodings, in a list of its
// own:
//
//	count   u8
//	count times:
//	  name    u8 length, then the bytes
//	  version u32
//	  data    u32 length, then the bytes: a plain type's value as it is
//	          in memory, a coded type's Append
//
// The receiver must have registered the same types: a value whose name it
// does not know, or whose version differs from its own, is not given, and
// [GiveCarried] says which.

// ErrCarriedMalformed is a carried list that is cut short, runs past its
// end or names a type with an empty name.
var ErrCarriedMalformed = errors.New("save: carried components cut short or malformed")

// maxCarried is the most values a carried list holds: its count is a
// byte.
const maxCarried = 255

// AppendCarried appends the list of entity e's components of types (in
// the order types lists them; a type e does not have is left out) to dst.
// A type that cannot be saved ([Type.Err]) is left out too.
func AppendCarried(dst []byte, w *ark.World, e ark.Entity, types []Type) []byte {
	at := len(dst)
	dst = append(dst, 0)
	u := w.Unsafe()
	n := 0
	for i := range types {
		t := &types[i]
		if t.err != nil || n == maxCarried {
			continue
		}
		id := ark.TypeID(w, t.typ)
		if !u.Has(e, id) {
			continue
		}
		p := u.Get(e, id)
		dst = append(dst, byte(len(t.name)))
		dst = append(dst, t.name...)
		dst = binary.LittleEndian.AppendUint32(dst, t.version)
		lenAt := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		if t.coded() {
			dst = t.encode(dst, p)
		} else {
			dst = append(dst, unsafe.Slice((*byte)(p), t.size)...)
		}
		binary.LittleEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
		n++
	}
	dst[at] = byte(n)
	return dst
}

// CarriedLen checks the shape of the carried list at the start of src
// and returns its length in bytes: the reader of a message that carries
// one checks it before acting on any of it.
func CarriedLen(src []byte) (int, error) {
	if len(src) < 1 {
		return 0, ErrCarriedMalformed
	}
	off := 1
	for range int(src[0]) {
		if off >= len(src) || src[off] == 0 || off+1+int(src[off])+8 > len(src) {
			return 0, ErrCarriedMalformed
		}
		off += 1 + int(src[off]) + 4
		n := binary.LittleEndian.Uint32(src[off:])
		off += 4
		if uint64(n) > uint64(len(src)-off) {
			return 0, ErrCarriedMalformed
		}
		off += int(n)
	}
	return off, nil
}

// GiveCarried gives entity e of w the components in the carried list src
// (checked by [CarriedLen]), adding those e lacks: the values of types
// the game registered, under the same name and version, that decode.
// Every value it can give is given; the error, if any, names each value
// left out and why (an unknown name, another version, a plain value of
// another size, a codec's refusal), and left counts them.
func GiveCarried(w *ark.World, e ark.Entity, src []byte, types []Type) (left int, err error) {
	if _, err := CarriedLen(src); err != nil {
		return 0, err
	}
	u := w.Unsafe()
	var errs []error
	off := 1
	for range int(src[0]) {
		name := string(src[off+1 : off+1+int(src[off])])
		off += 1 + int(src[off])
		version := binary.LittleEndian.Uint32(src[off:])
		n := int(binary.LittleEndian.Uint32(src[off+4:]))
		data := src[off+8 : off+8+n]
		off += 8 + n
		t := findType(types, name)
		switch {
		case t == nil || t.err != nil:
			errs = append(errs, fmt.Errorf("%q is not a registered type here", name))
			continue
		case t.version != version:
			errs = append(errs, fmt.Errorf("%q came in version %d, registered here as %d", name, version, t.version))
			continue
		case !t.coded() && n != t.size:
			errs = append(errs, fmt.Errorf("%q came in %d bytes, %d here", name, n, t.size))
			continue
		}
		id := ark.TypeID(w, t.typ)
		if t.coded() {
			// Decoded into a value of its own first, so that a refusal
			// leaves e as it was.
			v := newValue(t)
			if err := t.decode(data, v); err != nil {
				errs = append(errs, fmt.Errorf("%q: %w", name, err))
				continue
			}
			if !u.Has(e, id) {
				u.Add(e, id)
			}
			copyValue(u.Get(e, id), v, t)
			continue
		}
		if !u.Has(e, id) {
			u.Add(e, id)
		}
		copy(unsafe.Slice((*byte)(u.Get(e, id)), t.size), data)
	}
	if len(errs) > 0 {
		return len(errs), fmt.Errorf("save: carried components left out: %w", errors.Join(errs...))
	}
	return 0, nil
}

// DropCarried removes from entity e of w its components of types: what a
// server holding a copy of an actor owned elsewhere (a ghost) no longer
// keeps up to date.
func DropCarried(w *ark.World, e ark.Entity, types []Type) {
	u := w.Unsafe()
	for i := range types {
		t := &types[i]
		if t.err != nil {
			continue
		}
		if id := ark.TypeID(w, t.typ); u.Has(e, id) {
			u.Remove(e, id)
		}
	}
}

// newValue returns a new zero value of t's Go type.
func newValue(t *Type) unsafe.Pointer { return reflect.New(t.typ).UnsafePointer() }

// copyValue sets the value of t's Go type at dst to the one at src (with
// the write barriers a coded type's pointers need).
func copyValue(dst, src unsafe.Pointer, t *Type) {
	reflect.NewAt(t.typ, dst).Elem().Set(reflect.NewAt(t.typ, src).Elem())
}
