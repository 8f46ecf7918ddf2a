//! Random bytes from the operating system (getrandom), for every key, salt,
//! nonce, UUID and GUID the peers make. There is no fallback: a system that
//! gives no randomness is an error, never a clock-derived guess.

/// The operating system gave no random bytes.
#[derive(Debug, thiserror::Error)]
#[error("the operating system gave no random bytes: {0}")]
pub struct RandomError(getrandom::Error);

impl From<RandomError> for std::io::Error {
    fn from(e: RandomError) -> Self {
        std::io::Error::other(e)
    }
}

/// `N` random bytes.
pub fn bytes<const N: usize>() -> Result<[u8; N], RandomError> {
    let mut b = [0u8; N];
    getrandom::fill(&mut b).map_err(RandomError)?;
    Ok(b)
}

/// A random RakNet GUID.
pub fn guid() -> Result<u64, RandomError> {
    bytes::<8>().map(u64::from_le_bytes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes_differ_between_calls() {
        let (a, b) = (super::bytes::<32>().unwrap(), super::bytes::<32>().unwrap());
        assert_ne!(a, b);
        assert_ne!(a, [0u8; 32]);
        assert_ne!(super::guid().unwrap(), super::guid().unwrap());
    }
}
