//! Bit-level coding: MSB-first bit I/O and the canonical Huffman code of the h-delta codec.
//!
//! Everything here is independent of the file format; [`crate::block`] arranges these pieces
//! into blocks. See `format-spec/table.md`, sections "Bit order" and "Huffman code".

pub mod bitio;
pub mod huffman;
