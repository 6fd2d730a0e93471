/*-------------------------------------------------------------------------
 *
 * counter_fast.c
 *	  Counters per key, mode fast: the caller's side of the protocol that
 *	  counter_cache.c's head comment describes.  Take from the cached
 *	  block; when there is none, or it is used up, reserve the next block
 *	  of c->block values in the key's row (its last goes up by the block,
 *	  in the caller's transaction) and install it; when another
 *	  transaction's reservation comes next, wait for it to end.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "compat.h"
#include "counter_cache.h"
#include "counter_fast.h"
#include "counter_row.h"
#include "miscadmin.h"
#include "storage/lmgr.h"

static void
snowid_counter_tag(SnowidCounterTag *tag, const SnowidCounter *c, text *key)
{
	int			len = VARSIZE_ANY_EXHDR(key);

	Assert(len <= SNOWID_COUNTER_KEY_MAX);
	memset(tag, 0, sizeof(SnowidCounterTag));
	tag->dbid = MyDatabaseId;
	tag->relid = c->relid;
	tag->stamp = c->stamp;
	tag->len = len;
	memcpy(tag->key, VARDATA_ANY(key), len);
}

int64
snowid_counter_fast_next(const SnowidCounter *c, text *key)
{
	SnowidCounterTag tag;

	snowid_counter_require_shared();
	snowid_counter_tag(&tag, c, key);
	for (;;)
	{
		int64		value = 0;
		TransactionId xid = InvalidTransactionId;
		int64		last;

		CHECK_FOR_INTERRUPTS();
		switch (snowid_counter_cache_take(&tag, &value, &xid))
		{
			case COUNTER_TAKEN:
				return value;
			case COUNTER_WAIT:
				XactLockTableWait(xid, NULL, NULL, XLTW_None);
				continue;
			case COUNTER_RESERVE:
				break;
		}
		/* the row stays locked by this transaction until it ends */
		last = snowid_counter_row_next(c, key, c->block);
		return snowid_counter_cache_install(&tag, last - c->block + 1,
											Min(last, c->maxvalue));
	}
}

/* The last value handed out on this server, if the key is cached. */
bool
snowid_counter_fast_last(const SnowidCounter *c, text *key, int64 *last)
{
	SnowidCounterTag tag;

	snowid_counter_require_shared();
	snowid_counter_tag(&tag, c, key);
	return snowid_counter_cache_last(&tag, last);
}

/* This transaction moved or deleted the key's row. */
void
snowid_counter_fast_forget(const SnowidCounter *c, text *key)
{
	SnowidCounterTag tag;

	snowid_counter_require_shared();
	snowid_counter_tag(&tag, c, key);
	snowid_counter_cache_forget(&tag);
}
