package viewer_test

import (
	"encoding/hex"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/examples/crowd/viewer"
	"github.com/throng-go/throng/net/websocket"
	"github.com/throng-go/throng/net/wire"
)

func get(t *testing.T, url string) (int, string, string) {
	t.Helper()
	res, err := http.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header.Get("Content-Type"), string(body)
}

func TestPageAndScriptAreServed(t *testing.T) {
	srv := httptest.NewServer(viewer.Handler())
	defer srv.Close()
	code, typ, body := get(t, srv.URL+"/")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "text/html; charset=utf-8", typ)
	assert.Contains(t, body, `from "./throng.mjs"`)
	assert.Contains(t, body, `location.host + "/throng"`, "the page dials the WebSocket on its own origin")
	code, typ, body = get(t, srv.URL+"/throng.mjs")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "text/javascript; charset=utf-8", typ)
	assert.Contains(t, body, "export function decode")
	assert.Contains(t, body, `"`+websocket.Subprotocol+`"`)
	code, _, _ = get(t, srv.URL+"/viewer.go")
	assert.Equal(t, http.StatusNotFound, code)
}

// checkScript is run by Node: it decodes the frames given in hex and
// encodes a Hello and a Move, and prints it all as JSON.
const checkScript = `
import { decode, encodeHello, encodeMove, encodeCommand, REFUSE, refusalOf } from "./throng.mjs";
const frames = JSON.parse(process.argv[2]);
const hex = (b) => Buffer.from(b).toString("hex");
const decoded = frames.map((h) => {
  const f = decode(new Uint8Array(Buffer.from(h, "hex")));
  if (f.payload) f.payload = new TextDecoder().decode(f.payload);
  return f;
});
let bad = null;
try { decode(new Uint8Array([1, 0x11, 0, 0])); } catch (e) { bad = String(e.message); }
console.log(JSON.stringify({
  decoded, bad,
  hello: hex(encodeHello("viewer-7", 3)),
  move: hex(encodeMove({ seq: 9, x: 1.5, y: -2.25, z: 0.5, yaw: 1, worldOrCell: 4, flags: 6 })),
  command: hex(encodeCommand(new TextEncoder().encode("open door"))),
  refuse: REFUSE,
  closes: [4101, 4103, 4000, 1006].map(refusalOf),
}));
`

// TestScriptReadsAndWritesWhatGoDoes runs throng.mjs under Node (where Node
// is installed) on frames package wire encoded, and compares the Hello
// and Move it encodes with wire's bytes.
func TestScriptReadsAndWritesWhatGoDoes(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the page's script is checked where it is")
	}
	srv := httptest.NewServer(viewer.Handler())
	defer srv.Close()
	res, err := http.Get(srv.URL + "/throng.mjs")
	require.NoError(t, err)
	script, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "throng.mjs"), script, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "check.mjs"), []byte(checkScript), 0o600))

	batch := wire.AppendBatchHeader(nil, 77, 2)
	batch = wire.AppendRecord(batch, wire.Record{Actor: 5, X: 10.5, Y: -3, Z: 1, Yaw: math.Pi / 2, Flags: 3})
	batch = wire.AppendRecord(batch, wire.Record{Actor: 6, X: 0, Y: 4096, Z: 0, Yaw: 0, Flags: 0})
	frames := [][]byte{
		wire.AppendWelcome(nil, wire.Welcome{Actor: 7, TickRate: 30, Tick: 12, X: 1, Y: 2, Z: 3, Yaw: 0.5, WorldOrCell: 9}),
		wire.AppendAppear(nil, wire.Appear{Actor: 8, X: 4, Y: 5, Z: 6, Yaw: 0.25, WorldOrCell: 1, Flags: 2}),
		wire.AppendDisappear(nil, wire.Disappear{Actor: 8}),
		wire.AppendCorrection(nil, wire.Correction{Seq: 41, X: 1, Y: 1, Z: 0, Yaw: 0, WorldOrCell: 2}),
		wire.AppendRefuse(nil, wire.Refuse{Code: wire.RefuseBusy, Reason: []byte("server busy")}),
		batch,
		wire.AppendEvent(nil, []byte("door opened")),
		wire.AppendRate(nil, wire.Rate{Nominal: 30, Centihertz: 1850}),
		wire.AppendProp(nil, wire.Prop{Actor: 9, X: 7, Y: -8, Z: 0.5, Yaw: 0.25, WorldOrCell: 3, Flags: 0x200}),
	}
	hexes := make([]string, len(frames))
	for i, f := range frames {
		hexes[i] = hex.EncodeToString(f)
	}
	arg, err := json.Marshal(hexes)
	require.NoError(t, err)
	cmd := exec.Command(node, "check.mjs", string(arg))
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))

	var got struct {
		Decoded []map[string]any
		Bad     string
		Hello   string
		Move    string
		Command string
		Refuse  map[string]float64
		Closes  []int
	}
	require.NoError(t, json.Unmarshal(out, &got), string(out))
	require.Len(t, got.Decoded, len(frames))
	assert.Equal(t, map[string]any{"type": "welcome", "actor": 7.0, "tickRate": 30.0, "tick": 12.0, "x": 1.0, "y": 2.0, "z": 3.0, "yaw": 0.5, "worldOrCell": 9.0}, got.Decoded[0])
	assert.Equal(t, map[string]any{"type": "appear", "actor": 8.0, "x": 4.0, "y": 5.0, "z": 6.0, "yaw": 0.25, "worldOrCell": 1.0, "flags": 2.0}, got.Decoded[1])
	assert.Equal(t, map[string]any{"type": "disappear", "actor": 8.0}, got.Decoded[2])
	assert.Equal(t, map[string]any{"type": "correction", "seq": 41.0, "x": 1.0, "y": 1.0, "z": 0.0, "yaw": 0.0, "worldOrCell": 2.0}, got.Decoded[3])
	assert.Equal(t, map[string]any{"type": "refuse", "code": float64(wire.RefuseBusy), "reason": "server busy"}, got.Decoded[4])
	assert.Equal(t, "batch", got.Decoded[5]["type"])
	assert.Equal(t, 77.0, got.Decoded[5]["tick"])
	records := got.Decoded[5]["records"].([]any)
	require.Len(t, records, 2)
	first := records[0].(map[string]any)
	assert.Equal(t, 5.0, first["actor"])
	assert.Equal(t, 10.5, first["x"])
	assert.Equal(t, -3.0, first["y"])
	assert.InDelta(t, math.Pi/2, first["yaw"], 1e-9, "yaw comes back in radians")
	assert.Equal(t, 3.0, first["flags"])
	assert.Equal(t, 4096.0, records[1].(map[string]any)["y"])
	assert.Equal(t, map[string]any{"type": "rate", "nominal": 30.0, "hz": 18.5}, got.Decoded[7])
	assert.Equal(t, map[string]any{"type": "prop", "actor": 9.0, "x": 7.0, "y": -8.0, "z": 0.5, "yaw": 0.25, "worldOrCell": 3.0, "flags": 512.0}, got.Decoded[8])
	assert.True(t, strings.Contains(got.Bad, "28"), "a short Appear is refused: %q", got.Bad)

	hello, err := wire.AppendHello(nil, wire.Hello{Protocol: 3, Token: []byte("viewer-7")})
	require.NoError(t, err)
	assert.Equal(t, hex.EncodeToString(hello), got.Hello)
	move := wire.AppendMove(nil, wire.Move{Seq: 9, X: 1.5, Y: -2.25, Z: 0.5, Yaw: 1, WorldOrCell: 4, Flags: 6})
	assert.Equal(t, hex.EncodeToString(move), got.Move)
	assert.Equal(t, hex.EncodeToString(wire.AppendCommand(nil, []byte("open door"))), got.Command)
	assert.Equal(t, map[string]any{"type": "event", "payload": "door opened"}, got.Decoded[6])
	assert.Equal(t, map[string]float64{
		"UNSPECIFIED": float64(wire.RefuseUnspecified), "BUSY": float64(wire.RefuseBusy),
		"PROTOCOL": float64(wire.RefuseProtocol), "TOKEN": float64(wire.RefuseToken),
	}, got.Refuse)
	assert.Equal(t, []int{int(wire.RefuseBusy), int(wire.RefuseToken), -1, -1}, got.Closes, "close codes 4100+code are refusals")
}
