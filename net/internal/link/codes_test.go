package link

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/throng-go/throng/net/wire"
)

func TestCloseCodesCarryOnlyRefuseCodes(t *testing.T) {
	for _, code := range []wire.RefuseCode{wire.RefuseUnspecified, wire.RefuseBusy, wire.RefuseProtocol, wire.RefuseToken, 0xff} {
		got, ok := RefusalCode(CloseRefusal + uint64(code))
		assert.True(t, ok)
		assert.Equal(t, code, got)
	}
	for _, code := range []uint64{CloseClient, CloseDisconnect, CloseNoSession, CloseRefusal - 1, CloseRefusal + 0x100} {
		_, ok := RefusalCode(code)
		assert.False(t, ok, "close code %#x", code)
	}
}
