/*-------------------------------------------------------------------------
 *
 * decode.h
 *	  What the decoders (decode.c) share with other functions that take a
 *	  snowid apart.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_DECODE_H
#define SNOWID_DECODE_H

#include "layout.h"

/*
 * The layout in force and the node ID, after checking that id can be one of
 * its snowids (0 .. 2^id_bits - 1); an error (22023) if it cannot.
 */
extern void snowid_layout_for(int64 id, SnowidLayout *layout, int *node_id);

#endif							/* SNOWID_DECODE_H */
