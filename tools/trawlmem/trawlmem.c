/* trawlmem: a valgrind tool that writes trawl's binary memory log (.tmem)
 * while the program runs, as the data-binary writer of Mibu, Takahashi and
 * Sugawara ("Proposal and Implementation of Memory Access Analysis Method
 * for Memory Saving", IPSJ SIG Technical Report) does:
 * data accesses only (loads, stores, and modifies unless asked not to),
 * optionally limited to some kinds and one address range, as fixed-size
 * binary records instead of lackey's text (lackey formats every access
 * with printf, the main cost the paper measured).
 *
 * The file is trawl's format version 1 (ingest/src/memlog/binary.rs):
 * a 64-byte header (+16 for the range), ACC1 blocks of at most 65536
 * 16-byte records whose payload is a zstd frame made of raw
 * (uncompressed) zstd blocks, so no compressor runs inside valgrind, and
 * an END1 block with the instruction count. Each record carries the
 * ordinal lackey's log would give it: the number of guest instructions
 * executed up to and including the one that made the access.
 *
 * Loads, stores and modifies are found in the IR the way lackey's
 * --trace-mem=yes finds them (loads, stores, guarded loads/stores,
 * dirty helpers' memory effects, CAS, LL/SC); a store of the same size
 * to the same address expression right after a load in one instruction
 * is a modify. With --kinds=LS (the paper's writer) there is no
 * modify detection: such an instruction gives a load and a store.
 *
 * Options:
 *   --out=FILE       the log (default trawlmem.<pid>.tmem)
 *   --kinds=LSM      letters of the kinds to write (L, S, M)
 *   --range=LO-HI    only accesses whose address is in [LO, HI) (hex)
 *
 * Build and run: tools/trawlmem/build.sh, tools/trawlmem/run.sh. */

#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_machine.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_vki.h"

/* ---------------------------------------------------------- options */

static const HChar *clo_out = NULL;
static const HChar *clo_kinds = "LSM";
static Addr clo_lo = 0, clo_hi = 0;
static Bool clo_range = False;
/* Kinds written: bit 1 L, 2 S, 3 M (trawl's header bits). */
static UChar kinds = 0;

static Bool parse_hex(const HChar *s, const HChar **end, Addr *out)
{
   Addr v = 0;
   Int n = 0;
   if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
      s += 2;
   for (;; s++, n++) {
      HChar c = *s;
      Int d;
      if (c >= '0' && c <= '9') d = c - '0';
      else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      else break;
      v = (v << 4) | d;
   }
   *end = s;
   *out = v;
   return n > 0;
}

static Bool tm_process_cmd_line_option(const HChar *arg)
{
   const HChar *v;
   if VG_STR_CLO(arg, "--out", clo_out) {
   } else if VG_STR_CLO(arg, "--kinds", clo_kinds) {
   } else if VG_STR_CLO(arg, "--range", v) {
      const HChar *e;
      if (!parse_hex(v, &e, &clo_lo) || *e != '-' || !parse_hex(e + 1, &e, &clo_hi)
          || *e != 0 || clo_hi <= clo_lo)
         VG_(fmsg_bad_option)(arg, "expected --range=LO-HI in hex, LO < HI\n");
      clo_range = True;
   } else
      return False;
   return True;
}

static void tm_print_usage(void)
{
   VG_(printf)(
      "    --out=FILE       the binary log [trawlmem.<pid>.tmem]\n"
      "    --kinds=LSM      kinds written: L load, S store, M modify [LSM];\n"
      "                     without M a modify is a load and a store\n"
      "    --range=LO-HI    only addresses in [LO, HI), hex [all]\n");
}

static void tm_print_debug_usage(void)
{
   VG_(printf)("    (none)\n");
}

/* ---------------------------------------------------------- the log */

#define BLOCK_RECORDS 65536
#define RECORD_SIZE 16
#define ZSTD_BLOCK (128 * 1024)

/* Guest instructions executed so far: updated by the instrumented code. */
static ULong icount = 0;

static Int fd = -1;
static UChar *recs;             /* BLOCK_RECORDS records */
static UInt nrec = 0;
static ULong block_base = 0;    /* ordinal of the block's first record */
static ULong last_ord = 0;      /* ordinal of the last record written */
static ULong written = 0;       /* records written */

static void put_u16(UChar *p, UShort v) { p[0] = v; p[1] = v >> 8; }
static void put_u32(UChar *p, UInt v) { put_u16(p, v); put_u16(p + 2, v >> 16); }
static void put_u64(UChar *p, ULong v) { put_u32(p, v); put_u32(p + 4, v >> 32); }

static void write_all(const void *buf, SizeT len)
{
   const UChar *p = buf;
   while (len > 0) {
      Int n = VG_(write)(fd, p, len);
      if (n <= 0) {
         VG_(umsg)("trawlmem: writing %s failed\n", clo_out);
         VG_(exit)(1);
      }
      p += n;
      len -= n;
   }
}

static void block_header(const HChar *tag, UInt count, UInt raw_len, UInt stored,
                         ULong base, ULong extra)
{
   UChar h[32];
   VG_(memcpy)(h, tag, 4);
   put_u32(h + 4, count);
   put_u32(h + 8, raw_len);
   put_u32(h + 12, stored);
   put_u64(h + 16, base);
   put_u64(h + 24, extra);
   write_all(h, 32);
}

/* Writes the pending records as one ACC1 block: a zstd frame of raw
 * blocks (magic, a single-segment frame header with a 4-byte content
 * size, then 3-byte block headers: last flag, type 0 = raw, size). */
static void flush_block(void)
{
   if (nrec == 0)
      return;
   UInt raw = nrec * RECORD_SIZE;
   UInt nblocks = (raw + ZSTD_BLOCK - 1) / ZSTD_BLOCK;
   UInt stored = 4 + 1 + 4 + 3 * nblocks + raw;
   block_header("ACC1", nrec, raw, stored, block_base, 0);
   UChar fh[9];
   put_u32(fh, 0xFD2FB528);
   fh[4] = 0xA0; /* FCS 4 bytes, single segment, no checksum, no dict */
   put_u32(fh + 5, raw);
   write_all(fh, 9);
   for (UInt off = 0; off < raw; off += ZSTD_BLOCK) {
      UInt len = raw - off < ZSTD_BLOCK ? raw - off : ZSTD_BLOCK;
      UInt last = off + len == raw;
      UInt bh = last | (0 << 1) | (len << 3);
      UChar b3[3] = { bh & 0xff, (bh >> 8) & 0xff, (bh >> 16) & 0xff };
      write_all(b3, 3);
      write_all(recs + off, len);
   }
   written += nrec;
   nrec = 0;
}

static void record(Addr a, SizeT size, UChar kind)
{
   if (clo_range && (a < clo_lo || a >= clo_hi))
      return;
   ULong ord = icount;
   if (nrec == BLOCK_RECORDS || (nrec > 0 && ord - last_ord > 0xffffffffULL))
      flush_block();
   if (nrec == 0) {
      block_base = ord;
      last_ord = ord;
   }
   UChar *r = recs + (SizeT)nrec * RECORD_SIZE;
   put_u64(r, a);
   put_u32(r + 8, (UInt)(ord - last_ord));
   put_u16(r + 12, size > 0xffff ? 0xffff : (UShort)size);
   r[14] = kind;
   r[15] = 0;
   last_ord = ord;
   nrec++;
}

static VG_REGPARM(2) void tm_load(Addr a, SizeT size) { record(a, size, 1); }
static VG_REGPARM(2) void tm_store(Addr a, SizeT size) { record(a, size, 2); }
static VG_REGPARM(2) void tm_modify(Addr a, SizeT size) { record(a, size, 3); }

/* ---------------------------------------------------------- instrumentation */

/* An atom: a constant or a temporary (flat IR). */
typedef IRExpr IRAtom;

typedef enum { Ev_Dr = 1, Ev_Dw = 2, Ev_Dm = 3 } EvKind;

typedef struct {
   EvKind kind;
   IRAtom *addr;
   Int size;
   IRAtom *guard; /* NULL: unconditional */
} Event;

#define N_EVENTS 16
static Event events[N_EVENTS];
static Int n_events = 0;
/* Instructions instrumented since icount was last brought up to date. */
static ULong pending = 0;

static void add_count(IRSB *sb)
{
   if (pending == 0)
      return;
   IRExpr *at = mkIRExpr_HWord((HWord)&icount);
   IRTemp t1 = newIRTemp(sb->tyenv, Ity_I64);
   IRTemp t2 = newIRTemp(sb->tyenv, Ity_I64);
   addStmtToIRSB(sb, IRStmt_WrTmp(t1, IRExpr_Load(Iend_LE, Ity_I64, at)));
   addStmtToIRSB(sb, IRStmt_WrTmp(t2, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(t1),
                                                   IRExpr_Const(IRConst_U64(pending)))));
   addStmtToIRSB(sb, IRStmt_Store(Iend_LE, at, IRExpr_RdTmp(t2)));
   pending = 0;
}

/* Brings icount up to date (when there are accesses to record or `force`)
 * and calls the helpers for the buffered accesses, in order. */
static void flush_events(IRSB *sb, Bool force)
{
   if (n_events == 0 && !force)
      return;
   add_count(sb);
   for (Int i = 0; i < n_events; i++) {
      Event *ev = &events[i];
      if (!(kinds & (1 << ev->kind)))
         continue;
      const HChar *name;
      void *fn;
      switch (ev->kind) {
      case Ev_Dr: name = "tm_load"; fn = tm_load; break;
      case Ev_Dw: name = "tm_store"; fn = tm_store; break;
      default: name = "tm_modify"; fn = tm_modify; break;
      }
      IRExpr **argv = mkIRExprVec_2(ev->addr, mkIRExpr_HWord(ev->size));
      IRDirty *di = unsafeIRDirty_0_N(2, name, VG_(fnptr_to_fnentry)(fn), argv);
      if (ev->guard)
         di->guard = ev->guard;
      addStmtToIRSB(sb, IRStmt_Dirty(di));
   }
   n_events = 0;
}

static void add_event(IRSB *sb, EvKind k, IRAtom *addr, Int size, IRAtom *guard)
{
   tl_assert(isIRAtom(addr));
   /* A store right after a load of the same size and address expression,
    * both unconditional, in one instruction: a modify (as lackey). */
   if (k == Ev_Dw && (kinds & (1 << Ev_Dm)) && !guard && n_events > 0) {
      Event *last = &events[n_events - 1];
      if (last->kind == Ev_Dr && last->size == size && !last->guard
          && eqIRAtom(last->addr, addr)) {
         last->kind = Ev_Dm;
         return;
      }
   }
   if (n_events == N_EVENTS)
      flush_events(sb, False);
   events[n_events++] = (Event){ k, addr, size, guard };
}

static IRSB *tm_instrument(VgCallbackClosure *closure, IRSB *in,
                           const VexGuestLayout *layout,
                           const VexGuestExtents *vge,
                           const VexArchInfo *archinfo_host,
                           IRType gWordTy, IRType hWordTy)
{
   if (gWordTy != hWordTy)
      VG_(tool_panic)("host/guest word size mismatch");
   IRSB *out = deepCopyIRSBExceptStmts(in);
   IRTypeEnv *tyenv = in->tyenv;
   Int i = 0;
   while (i < in->stmts_used && in->stmts[i]->tag != Ist_IMark)
      addStmtToIRSB(out, in->stmts[i++]);
   n_events = 0;
   pending = 0;
   for (; i < in->stmts_used; i++) {
      IRStmt *st = in->stmts[i];
      if (!st || st->tag == Ist_NoOp)
         continue;
      switch (st->tag) {
      case Ist_AbiHint:
      case Ist_Put:
      case Ist_PutI:
      case Ist_MBE:
         break;
      case Ist_IMark:
         /* The previous instruction's accesses, then count this one. */
         flush_events(out, False);
         pending++;
         break;
      case Ist_WrTmp: {
         IRExpr *d = st->Ist.WrTmp.data;
         if (d->tag == Iex_Load)
            add_event(out, Ev_Dr, d->Iex.Load.addr, sizeofIRType(d->Iex.Load.ty), NULL);
         break;
      }
      case Ist_Store:
         add_event(out, Ev_Dw, st->Ist.Store.addr,
                   sizeofIRType(typeOfIRExpr(tyenv, st->Ist.Store.data)), NULL);
         break;
      case Ist_StoreG: {
         IRStoreG *sg = st->Ist.StoreG.details;
         add_event(out, Ev_Dw, sg->addr, sizeofIRType(typeOfIRExpr(tyenv, sg->data)),
                   sg->guard);
         break;
      }
      case Ist_LoadG: {
         IRLoadG *lg = st->Ist.LoadG.details;
         IRType ty = Ity_INVALID, wide = Ity_INVALID;
         typeOfIRLoadGOp(lg->cvt, &wide, &ty);
         add_event(out, Ev_Dr, lg->addr, sizeofIRType(ty), lg->guard);
         break;
      }
      case Ist_Dirty: {
         IRDirty *d = st->Ist.Dirty.details;
         if (d->mFx != Ifx_None) {
            if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
               add_event(out, Ev_Dr, d->mAddr, d->mSize, NULL);
            if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
               add_event(out, Ev_Dw, d->mAddr, d->mSize, NULL);
         }
         break;
      }
      case Ist_CAS: {
         IRCAS *cas = st->Ist.CAS.details;
         Int size = sizeofIRType(typeOfIRExpr(tyenv, cas->dataLo));
         if (cas->dataHi != NULL)
            size *= 2;
         add_event(out, Ev_Dr, cas->addr, size, NULL);
         add_event(out, Ev_Dw, cas->addr, size, NULL);
         break;
      }
      case Ist_LLSC: {
         if (st->Ist.LLSC.storedata == NULL)
            add_event(out, Ev_Dr, st->Ist.LLSC.addr,
                      sizeofIRType(typeOfIRTemp(tyenv, st->Ist.LLSC.result)), NULL);
         else
            add_event(out, Ev_Dw, st->Ist.LLSC.addr,
                      sizeofIRType(typeOfIRExpr(tyenv, st->Ist.LLSC.storedata)), NULL);
         break;
      }
      case Ist_Exit:
         /* Leaving the block here: what ran so far is counted first. */
         flush_events(out, True);
         break;
      default:
         ppIRStmt(st);
         tl_assert(0);
      }
      addStmtToIRSB(out, st);
   }
   flush_events(out, True);
   return out;
}

/* ---------------------------------------------------------- start, end */

static void tm_post_clo_init(void)
{
   for (const HChar *k = clo_kinds; *k; k++) {
      switch (*k) {
      case 'L': kinds |= 1 << Ev_Dr; break;
      case 'S': kinds |= 1 << Ev_Dw; break;
      case 'M': kinds |= 1 << Ev_Dm; break;
      default:
         VG_(fmsg_bad_option)("--kinds", "letters of L, S, M expected, got %s\n", clo_kinds);
      }
   }
   if (clo_out == NULL) {
      HChar *name = VG_(malloc)("tm.out", 64);
      VG_(sprintf)(name, "trawlmem.%d.tmem", VG_(getpid)());
      clo_out = name;
   }
   SysRes r = VG_(open)(clo_out, VKI_O_CREAT | VKI_O_TRUNC | VKI_O_WRONLY,
                        VKI_S_IRUSR | VKI_S_IWUSR | VKI_S_IRGRP | VKI_S_IROTH);
   if (sr_isError(r)) {
      VG_(umsg)("trawlmem: cannot create %s\n", clo_out);
      VG_(exit)(1);
   }
   fd = sr_Res(r);
   recs = VG_(malloc)("tm.recs", (SizeT)BLOCK_RECORDS * RECORD_SIZE);
   /* Header: magic, version 1, header length, page size, kinds, flags,
    * ranges, record size, reserved, the range. */
   UChar h[80];
   VG_(memset)(h, 0, sizeof h);
   VG_(memcpy)(h, "TRAWLMEM", 8);
   put_u16(h + 8, 1);
   put_u16(h + 10, clo_range ? 80 : 64);
   put_u32(h + 12, 4096);
   h[16] = kinds;
   h[17] = 0;
   put_u16(h + 18, clo_range ? 1 : 0);
   put_u32(h + 20, RECORD_SIZE);
   if (clo_range) {
      put_u64(h + 64, clo_lo);
      put_u64(h + 72, clo_hi);
   }
   write_all(h, clo_range ? 80 : 64);
}

static void tm_fini(Int exitcode)
{
   flush_block();
   /* END1: the instruction count; a log without it was cut short. */
   block_header("END1", 0, 0, 0, icount, 0);
   VG_(close)(fd);
   VG_(umsg)("trawlmem: %llu instructions, %llu accesses written to %s\n",
             icount, written, clo_out);
}

static void tm_pre_clo_init(void)
{
   VG_(details_name)("trawlmem");
   VG_(details_version)("1");
   VG_(details_description)("memory accesses as trawl's binary log");
   VG_(details_copyright_author)("trawl authors (after lackey, by Nicholas Nethercote)");
   VG_(details_bug_reports_to)("the trawl repository");
   VG_(details_avg_translation_sizeB)(200);
   VG_(basic_tool_funcs)(tm_post_clo_init, tm_instrument, tm_fini);
   VG_(needs_command_line_options)(tm_process_cmd_line_option, tm_print_usage,
                                   tm_print_debug_usage);
}

VG_DETERMINE_INTERFACE_VERSION(tm_pre_clo_init)
