// throng.mjs: Throng's wire format for browsers (see the net package doc
// for the layouts). Pure functions, no DOM: the viewer page uses them, and
// the viewer's Go test runs them under Node against frames Go encoded.

export const VERSION = 1;
export const SUBPROTOCOL = "throng.v1";
export const TYPE = {
  HELLO: 0x01, MOVE: 0x02, COMMAND: 0x03,
  WELCOME: 0x10, APPEAR: 0x11, DISAPPEAR: 0x12, CORRECTION: 0x13, REFUSE: 0x14, EVENT: 0x15, RATE: 0x16, PROP: 0x17,
  BATCH: 0x20,
};
// REFUSE are the codes of a Refuse frame (net.RefuseCode): why the server
// turned a client away. Only BUSY says to come back later.
export const REFUSE = { UNSPECIFIED: 0, BUSY: 1, PROTOCOL: 2, TOKEN: 3 };
// CLOSE are the WebSocket close codes the server ends a connection with:
// DISCONNECT for a session it ended (the reason says why), REFUSAL plus the
// Refuse code for one it turned away before any Welcome.
export const CLOSE = { DISCONNECT: 4000, REFUSAL: 4100 };

// refusalOf returns the Refuse code a WebSocket close code carries, or -1
// for a close that is no refusal.
export function refusalOf(closeCode) {
  return closeCode >= CLOSE.REFUSAL && closeCode <= CLOSE.REFUSAL + 0xff ? closeCode - CLOSE.REFUSAL : -1;
}

const BATCH_HEADER = 8;
const RECORD = 20;
const TURN = 2 * Math.PI;

// encodeHello returns a Hello frame: the game's protocol version and the
// player's token (at most 64 bytes of UTF-8).
export function encodeHello(token, protocol = 0) {
  const t = new TextEncoder().encode(token);
  if (t.length > 64) throw new Error("token longer than 64 bytes");
  const b = new Uint8Array(5 + t.length);
  const v = new DataView(b.buffer);
  b[0] = VERSION; b[1] = TYPE.HELLO;
  v.setUint16(2, protocol, true);
  b[4] = t.length;
  b.set(t, 5);
  return b;
}

// encodeMove returns a Move frame. seq must grow from one move to the next.
export function encodeMove(m) {
  const b = new Uint8Array(28);
  const v = new DataView(b.buffer);
  b[0] = VERSION; b[1] = TYPE.MOVE;
  v.setUint32(2, m.seq >>> 0, true);
  v.setFloat32(6, m.x, true); v.setFloat32(10, m.y, true); v.setFloat32(14, m.z ?? 0, true);
  v.setFloat32(18, m.yaw ?? 0, true);
  v.setUint32(22, (m.worldOrCell ?? 0) >>> 0, true);
  v.setUint16(26, m.flags ?? 0, true);
  return b;
}

// encodeCommand returns a Command frame carrying payload (a Uint8Array of
// the game's own bytes; the server hands it to the game's systems).
export function encodeCommand(payload) {
  const b = new Uint8Array(2 + payload.length);
  b[0] = VERSION; b[1] = TYPE.COMMAND;
  b.set(payload, 2);
  return b;
}

// decode returns a frame as an object with its type's fields (type is the
// name: "welcome", "appear", ...), or throws on a frame it cannot read.
export function decode(buf) {
  const v = new DataView(buf instanceof ArrayBuffer ? buf : buf.buffer, buf.byteOffset ?? 0, buf.byteLength);
  if (v.byteLength < 2) throw new Error("short frame");
  const type = v.getUint8(1);
  if (v.getUint8(0) !== VERSION && type !== TYPE.REFUSE) throw new Error("unknown version " + v.getUint8(0));
  const need = (n) => { if (v.byteLength !== n) throw new Error(`frame of type ${type}: ${v.byteLength} bytes, want ${n}`); };
  const pos = (at) => ({ x: v.getFloat32(at, true), y: v.getFloat32(at + 4, true), z: v.getFloat32(at + 8, true), yaw: v.getFloat32(at + 12, true) });
  switch (type) {
    case TYPE.WELCOME:
      need(32);
      return { type: "welcome", actor: v.getUint32(2, true), tickRate: v.getUint16(6, true), tick: v.getUint32(8, true), ...pos(12), worldOrCell: v.getUint32(28, true) };
    case TYPE.APPEAR:
      need(28);
      return { type: "appear", actor: v.getUint32(2, true), ...pos(6), worldOrCell: v.getUint32(22, true), flags: v.getUint16(26, true) };
    case TYPE.PROP: // a prop in sight, new or changed: its newest Prop is its state, until a Disappear
      need(28);
      return { type: "prop", actor: v.getUint32(2, true), ...pos(6), worldOrCell: v.getUint32(22, true), flags: v.getUint16(26, true) };
    case TYPE.DISAPPEAR:
      need(6);
      return { type: "disappear", actor: v.getUint32(2, true) };
    case TYPE.CORRECTION:
      need(26);
      return { type: "correction", seq: v.getUint32(2, true), ...pos(6), worldOrCell: v.getUint32(22, true) };
    case TYPE.REFUSE: {
      if (v.byteLength < 4) throw new Error("short refuse");
      const n = v.getUint8(3);
      need(4 + n);
      return { type: "refuse", code: v.getUint8(2), reason: new TextDecoder().decode(new Uint8Array(v.buffer, v.byteOffset + 4, n)) };
    }
    case TYPE.EVENT:
      return { type: "event", payload: new Uint8Array(v.buffer, v.byteOffset + 2, v.byteLength - 2) };
    case TYPE.RATE:
      need(6);
      return { type: "rate", nominal: v.getUint16(2, true), hz: v.getUint16(4, true) / 100 };
    case TYPE.BATCH: {
      if (v.byteLength < BATCH_HEADER) throw new Error("short batch");
      const count = v.getUint16(6, true);
      need(BATCH_HEADER + RECORD * count);
      const records = [];
      for (let i = 0, at = BATCH_HEADER; i < count; i++, at += RECORD) {
        records.push({
          actor: v.getUint32(at, true),
          x: v.getFloat32(at + 4, true), y: v.getFloat32(at + 8, true), z: v.getFloat32(at + 12, true),
          yaw: v.getUint16(at + 16, true) * TURN / 65536,
          flags: v.getUint16(at + 18, true),
        });
      }
      return { type: "batch", tick: v.getUint32(2, true), records };
    }
  }
  throw new Error("unknown frame type " + type);
}
