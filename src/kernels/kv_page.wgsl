// Snippet (//#include kv_page): where position p of KV head g of a slot lives in the cache, shared by qk_prepare
// and attention. Uses the including kernel's D, HKV, CTX overrides and its `rows` binding.
// Contiguous (PAGED false): the cache is [slots, HKV, CTX, D]. Paged (docs/prefix-reuse.md): the cache is a pool
// of pages [pages, HKV, PAGE, D] and rows[PT + slot * MAXP + p / PAGE] names the page holding position p of the
// slot (the host writes every entry of every slot's table with a page id inside the pool, so no index leaves it).
override PAGED: bool = false;
override PAGE: u32 = 16u;       // positions per page
override PT: u32 = 8u;          // word offset of the page tables in `rows`
override MAXP: u32 = 1u;        // table entries per slot: ceil(CTX / PAGE)

// The row (in units of D elements) of position p of KV head g of `slot`.
fn kvRow(slot: u32, g: u32, p: u32) -> u32 {
  if (PAGED) {
    let page = rows[PT + slot * MAXP + p / PAGE];
    return (page * HKV + g) * PAGE + p % PAGE;
  }
  return (slot * HKV + g) * CTX + p;
}
