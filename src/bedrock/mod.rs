//! The Minecraft Bedrock game layer carried in RakNet's 0xFE messages.

pub mod names;
