// Snippet (//#include gdn_layout): the GDN activation row widths (qwen3_5-architecture.md §6), from the including
// kernel's NK, NV, KD, VD overrides. proj = [q | k | v | z | b | a] per token, prep = [q | k | v | β | g].
fn channels() -> u32 { return 2u * NK * KD + NV * VD; }
fn projWidth() -> u32 { return channels() + NV * VD + 2u * NV; }
fn prepWidth() -> u32 { return channels() + 2u * NV; }
