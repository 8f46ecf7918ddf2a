//! A bounded reader over a game packet's body (after its header): the
//! integers, varints, strings and UUIDs of Bedrock's encoding, each `None`
//! when the body is cut short; a string longer than [`MAX_STRING`] is
//! `None` too, never an allocation.

use super::batch::read_varu32;

/// Bytes of one string at most (a Login's chain is tens of KB).
pub(super) const MAX_STRING: usize = 4 << 20;

/// A reader over a packet's body (after its header).
pub(super) struct Body<'a> {
    b: &'a [u8],
    pub(super) pos: usize,
}

impl<'a> Body<'a> {
    pub(super) fn new(b: &'a [u8]) -> Self {
        Body { b, pos: 0 }
    }
    pub(super) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }
    pub(super) fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|s| s[0])
    }
    pub(super) fn i32_be(&mut self) -> Option<i32> {
        self.take(4)
            .map(|s| i32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
    pub(super) fn u16_le(&mut self) -> Option<u16> {
        self.take(2).map(|s| u16::from_le_bytes([s[0], s[1]]))
    }
    pub(super) fn u32_le(&mut self) -> Option<u32> {
        self.take(4)
            .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    pub(super) fn f32_le(&mut self) -> Option<f32> {
        self.take(4)
            .map(|s| f32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    pub(super) fn varu32(&mut self) -> Option<u32> {
        read_varu32(self.b, &mut self.pos)
    }
    pub(super) fn zigzag32(&mut self) -> Option<i32> {
        let v = self.varu32()?;
        Some(((v >> 1) as i32) ^ -((v & 1) as i32))
    }
    pub(super) fn string(&mut self) -> Option<&'a str> {
        let n = self.varu32()? as usize;
        if n > MAX_STRING {
            return None;
        }
        std::str::from_utf8(self.take(n)?).ok()
    }
    pub(super) fn rest(&self) -> usize {
        self.b.len().saturating_sub(self.pos)
    }
    pub(super) fn bool(&mut self) -> Option<bool> {
        self.u8().map(|b| b != 0)
    }
    pub(super) fn u64_le(&mut self) -> Option<u64> {
        self.take(8)
            .map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
    }
    /// A varuint64: at most 10 bytes.
    pub(super) fn varu64(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    pub(super) fn zigzag64(&mut self) -> Option<i64> {
        let v = self.varu64()?;
        Some(((v >> 1) as i64) ^ -((v & 1) as i64))
    }
    /// 16 bytes as a UUID string: two little-endian 64-bit halves, the
    /// most significant first, as the game, gophertunnel, PocketMine and
    /// CloudburstMC read them (bedrock-protocol takes the bytes in their
    /// order, so its UUIDs show here with each half reversed).
    pub(super) fn uuid(&mut self) -> Option<String> {
        let b: [u8; 16] = self.take(16)?.try_into().ok()?;
        Some(crate::wire::cursor::uuid_le_halves(&b))
    }
}
