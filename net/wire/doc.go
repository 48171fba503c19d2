// Package wire is what a Throng client and server say to each other, and
// what the server asks of a transport: the binary codec of every frame, the
// movement records and their batches, the framing of a reliable stream, and
// the [Transport] interface the tick talks to.
//
// It imports nothing of Throng's and knows nothing of the ECS. The
// transports live beside it, each in a package of its own, so that a
// program imports only those it uses:
//
//   - net/mem: in-process sessions, for tests, benchmarks and bots that
//     share the server's process;
//   - net/quic: real clients over QUIC;
//   - net/websocket: browsers, one binary WebSocket message a frame;
//   - net/multi: several transports serving one world;
//   - net/client: the Go client, over QUIC or a WebSocket, for bots and
//     tools.
//
// # Outline
//
//   - Codec: one AppendX / DecodeX pair per frame type ([AppendMove],
//     [DecodeMove], ...), the union decoder [Decode] into a reusable
//     [Frame], and [PeekType] to dispatch by hand. Decoders never panic on
//     any input, never allocate, and return [CodecError] constants.
//   - Movement records: [Record], encoded once per sender per tick with
//     [PutRecord] into a flat buffer, then copied as RecordSize-byte slices
//     into each recipient's batch behind [AppendBatchHeader]
//     ([SetBatchCount] fixes the count afterwards). [DecodeBatch] gives a
//     [Batch] whose records [Batch.At] reads without allocating.
//   - Stream framing: reliable frames travel on a byte stream behind a
//     uint16 length prefix ([AppendStreamFrame]); a [StreamReader]
//     reassembles them from reads split anywhere.
//   - The server's side of a transport: [Transport], [Inbound],
//     [SessionID], [Stats], and [BatchSender] for a transport that takes a
//     session's datagrams of a tick in one call, [LaneSender] for one that
//     keeps a lane per relay unit, [SendAhead] for one that would be told
//     the next recipient ahead.
//
// # Wire format
//
// All integers little-endian, floats IEEE 754 binary32. Every frame starts
// with the version byte ([Version] = 1) and the [Type] byte. Decoders reject
// another version ([ErrVersion]) except in a Refuse, whose layout is frozen
// so any client can read why it was refused; they reject frames that are
// short ([ErrShort]) or have bytes left over ([ErrTrailing]). Values
// (NaN, ranges, ownership) are the server's to validate, not the codec's.
//
//	Hello      0x01  client -> server, reliable        5 + len(token) bytes
//	  0  1  version       1  1  type
//	  2  2  protocol (uint16, the game's own version)
//	  4  1  token length (<= MaxTokenLen = 64)   5  n  token
//
//	Move       0x02  client -> server                  28 bytes
//	  0  1  version       1  1  type
//	  2  4  seq (uint32)
//	  6  4  x   10 4  y   14 4  z   18 4  yaw (radians)
//	  22 4  worldOrCell (uint32)
//	  26 2  animation flags (uint16)
//
//	Welcome    0x10  server -> client, reliable        32 bytes
//	  0  1  version       1  1  type
//	  2  4  actor (uint32)
//	  6  2  tick rate (uint16, Hz)
//	  8  4  tick (uint32, low 32 bits)
//	  12 4  x   16 4  y   20 4  z   24 4  yaw
//	  28 4  worldOrCell
//
//	Appear     0x11  server -> client, reliable        28 bytes
//	  0  1  version       1  1  type
//	  2  4  actor
//	  6  4  x   10 4  y   14 4  z   18 4  yaw
//	  22 4  worldOrCell   26 2  animation flags
//
//	Disappear  0x12  server -> client, reliable        6 bytes
//	  0  1  version       1  1  type       2  4  actor
//
//	Correction 0x13  server -> client, reliable        26 bytes
//	  0  1  version       1  1  type
//	  2  4  seq of the rejected Move
//	  6  4  x   10 4  y   14 4  z   18 4  yaw
//	  22 4  worldOrCell
//
//	Refuse     0x14  server -> client, reliable        4 + len(reason) bytes
//	  0  1  version (any) 1  1  type
//	  2  1  code (RefuseCode)
//	  3  1  reason length (<= MaxReasonLen = 255)   4  n  reason (UTF-8)
//
//	Command    0x03  client -> server, reliable        2 + len(payload) bytes
//	  0  1  version       1  1  type       2  n  payload (the game's own)
//
//	Event      0x15  server -> client, reliable        2 + len(payload) bytes
//	  0  1  version       1  1  type       2  n  payload (the game's own)
//
//	Rate       0x16  server -> client, reliable        6 bytes
//	  0  1  version       1  1  type
//	  2  2  nominal tick rate (Hz)   4  2  rate over the last second (1/100 Hz)
//
//	Prop       0x17  server -> client, reliable        28 bytes
//	  laid out as Appear: a prop in view, new or changed
//
//	Batch      0x20  server -> client, datagram        8 + 20*count bytes
//	  0  1  version       1  1  type
//	  2  4  tick (uint32, low 32 bits)
//	  6  2  count (uint16)
//	  8  20*count  movement records, each:
//	    0  4  actor   4  4  x   8  4  y   12 4  z
//	    16 2  yaw (uint16, 65536 steps per turn)
//	    18 2  animation flags
//
// A batch datagram is at most [MaxBatchPayload] (1150) bytes, which holds
// [MaxRecordsPerBatch] (57) records.
//
// Why positions stay float32 while yaw is quantized: a record is encoded
// once per sender and copied to every recipient, so it cannot be relative
// to the recipient; 16-bit positions relative to the chunk would need the
// chunk in the record (4 more bytes) and tie the codec to the chunk size,
// saving 2 bytes of 20. Full floats also let a client compare a
// [Correction] with the records it received exactly. Yaw loses nothing a
// player can see at 1/65536 of a turn and halves its size.
//
// On a reliable byte stream each frame is preceded by its length as a
// uint16 ([StreamPrefixSize] bytes); a reader rejects lengths below
// [HeaderSize] or above its limit ([ErrStreamLength]).
//
// # Task -> API
//
//   - Send a client's movement: [AppendMove]; on the server, [DecodeMove].
//   - Handshake: client [AppendHello]; server [DecodeHello], then
//     [AppendWelcome] or [AppendRefuse] with [RefuseBusy],
//     [RefuseProtocol] or [RefuseToken].
//   - Tell a client who it sees: [AppendAppear], [AppendDisappear]; the
//     props near it: [AppendProp].
//   - Carry the game's own messages, which Throng does not read: a
//     client's commands (client.Client.SendCommand, [AppendCommand],
//     [DecodeCommand]) and the server's events ([AppendEvent]; a client
//     reads [Frame.Payload] of a TypeEvent frame).
//   - Reject a move: [AppendCorrection].
//   - Encode a sender's record once per tick: [PutRecord] into
//     buf[i*RecordSize:]; build a recipient's batch:
//     [AppendBatchHeader], append record slices, [SetBatchCount]; stop at
//     [MaxRecordsPerBatch].
//   - Read any frame on a client: [Decode] into a reused [Frame]; a batch:
//     [Batch.Len], [Batch.At].
//   - Frame a reliable stream: [AppendStreamFrame] to write,
//     [NewStreamReader], [StreamReader.Feed], [StreamReader.Next] to read.
//   - Drive the server's network: [Transport.Receive] once per tick, then
//     [Transport.SendUnreliable] / [Transport.SendReliable] /
//     [Transport.Disconnect]; read [Transport.Stats] for metrics. A
//     transport that also implements [BatchSender] gets a session's
//     datagrams of a tick in one call (with [LaneSender], from the relay
//     unit that built them); one that implements [SendAhead] is
//     told each recipient's session before the relay builds the batch of
//     the recipient before it.
package wire
