// Package save writes a Throng world to disk and reads it back: the
// actors the game spawned (NPCs, the world's own objects) and its props,
// which come back as props, each with its Transform, Animation, relevance
// class (components.Client.Class) and the game's own components
// registered as a [Type]. A class is kept because it is world state the
// game chose, often one of its own classes, which no rule could give
// again on load; a file from before classes were kept (format versions 1
// to 3) loads with the classes a spawn gives: NPCs ClassNPC, props
// ClassProp, players' actors ClassPlayer.
//
// A save is a picture of one tick boundary, taken in two steps so that
// the world barely stops. The freeze ([Saver.Begin], then
// [Saver.CopyUnit] for each unit, on the server's worker pool) copies the
// component columns of every chunk table, the props' tables too (of the
// Client column, where no player needs the rest, only each row's class: a
// byte), into one buffer, sized and touched after the save before; the rest
// ([Saver.Write]: encoding, checksums, writing, fsync) runs on a goroutine
// of its own while the world ticks on.
//
// A save directory holds save files and a MANIFEST naming the latest
// complete one. Each file is written to a temporary name, fsynced,
// renamed and the directory fsynced; only then is the manifest replaced
// the same way. A crash at any moment leaves the manifest naming a
// complete save. Every part of a file carries a CRC32C, and [Read] checks
// all of them, and that every class is below components.MaxClasses,
// before anything is restored: a damaged file is refused with a
// [*FormatError] naming the part. [Load], which a server uses, checks the
// same while it places the blocks already checked, so that reading
// overlaps with building the world; a fault fails it with the same error,
// and the world it was filling is to be thrown away (a server's New
// fails, and nothing of the file is run).
//
// Byte order: plain types are saved as their bytes in memory, which is
// little endian on every platform Go supports Throng on (amd64, arm64).
package save
