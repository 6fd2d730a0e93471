/*-------------------------------------------------------------------------
 *
 * snowid.h
 *	  Declarations shared between the modules of snowid.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_H
#define SNOWID_H

#include "clock.h"
#include "compat.h"
#include "continuation.h"
#include "durable.h"
#include "highwater.h"
#include "state.h"
#include "guc.h"
#include "layout.h"
#include "lib/stringinfo.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "wal.h"

#endif							/* SNOWID_H */
