/*
 * inject/agent/offsets.h - field offsets of struct athread, ag_site and
 * ag_func (agent.h) and the constants the trampolines' fast paths use
 * (tramp.S).  hot.c checks every one against
 * offsetof, so a change of the struct that forgets this file fails to build.
 */
#ifndef PROPEL_AGENT_OFFSETS_H
#define PROPEL_AGENT_OFFSETS_H

#define AT_CUR 0
#define AT_END 8
#define AT_BUSY 16
#define AT_GEN 20
#define AT_DEAD 24
#define AT_DEPTH 32
#define AT_RING 40
#define AT_STAMP 48
#define AT_STAMP_LEFT 56
#define AT_STAMP_EVERY 60 /* u16 now, u16 most */
#define STAMP_SPARSE_TSC 20000 /* ~7 us at 3 GHz: stamp the next record */
#define AT_SHADOW 128 /* struct shadow: 16 bytes, slot/func/site */

#define SHADOW_MAX_ASM 8192

#define SITE_TARGET 0 /* struct ag_site */
#define SITE_CACHE 8
#define SITE_ID 16
#define SITE_LEANST 20
#define SITE_OLO 24
#define SITE_OHI 32
#define SITE_FAST 40
#define SITE_PIC 256 /* struct ag_site's pic[8] */
#define PIC_PROBES_ASM 4 /* slots a callee may lie in from its first */
#define FUNC_ADDR 8 /* struct ag_func */
#define FUNC_ID 16
#define FUNC_FLAGS 20
#define F_READY_ASM 1
#define F_PLT_ASM 2
#define F_SYSTEM_ASM 4
#define F_SLOW_ASM 8
#define F_NOCB_ASM 256
#define F_PURE_ASM 512
#define F_QUIET_ASM 16384

#define FUNC_TAB_BITS 16 /* ag_func_tab (patch.c): 1 << bits heads */

#define PROPEL_REC_ENTRY_ASM 1 /* PROPEL_REC_ENTRY (share/record.h) */
#define PROPEL_REC_EXIT_ASM 2  /* PROPEL_REC_EXIT */
#define PROPEL_REC_CALL_ASM 13 /* PROPEL_REC_CALL */

#endif
