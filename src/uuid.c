/*-------------------------------------------------------------------------
 *
 * uuid.c
 *	  Snowids as RFC 9562 version 7 UUIDs: snowid_to_uuid(),
 *	  snowid_from_uuid() and snowid_next_uuid().  The format is in uuid.h.
 *
 * Converting reads the layout in force, as the decoders do, so it works
 * without the preload; snowid_next_uuid() needs it, as snowid_next() does.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "decode.h"
#include "fmgr.h"
#include "generator.h"
#include "layout.h"
#include "lease.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "uuid.h"

PG_FUNCTION_INFO_V1(snowid_to_uuid);
PG_FUNCTION_INFO_V1(snowid_from_uuid);
PG_FUNCTION_INFO_V1(snowid_next_uuid);

/* Milliseconds from the Unix epoch to PostgreSQL's (2000-01-01). */
#define SNOWID_UNIX_TO_PG_MS \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000)

#define SNOWID_UUID_LOW62		((UINT64CONST(1) << 62) - 1)

int64
snowid_uuid_time_ms(const SnowidLayout *layout, int64 tick)
{
	TimestampTz start;
	int64		ms;

	/* a tick timestamptz cannot hold lies long after the field's end */
	if (!snowid_tick_start(layout, tick, &start))
		return SNOWID_UUID_MAX_MS;
	ms = start / 1000;
	if (start % 1000 < 0)
		ms--;					/* round down before 2000 too */
	ms += SNOWID_UNIX_TO_PG_MS;
	if (ms < 0)
		return 0;
	return Min(ms, SNOWID_UUID_MAX_MS);
}

static void
snowid_put_u64(unsigned char *bytes, uint64 value)
{
	for (int i = 7; i >= 0; i--)
	{
		bytes[i] = (unsigned char) (value & 0xFF);
		value >>= 8;
	}
}

static uint64
snowid_get_u64(const unsigned char *bytes)
{
	uint64		value = 0;

	for (int i = 0; i < 8; i++)
		value = (value << 8) | bytes[i];
	return value;
}

void
snowid_uuid_make(const SnowidLayout *layout, int64 id, pg_uuid_t *uuid)
{
	uint64		ms = (uint64) snowid_uuid_time_ms(layout, snowid_id_tick(layout, id));
	uint64		high = (ms << 16) | (UINT64CONST(7) << 12) | ((uint64) id >> 62);
	uint64		low = (UINT64CONST(2) << 62) | ((uint64) id & SNOWID_UUID_LOW62);

	snowid_put_u64(uuid->data, high);
	snowid_put_u64(uuid->data + 8, low);
}

void
snowid_uuid_split(const pg_uuid_t *uuid, SnowidUuidParts *parts)
{
	uint64		high = snowid_get_u64(uuid->data);
	uint64		low = snowid_get_u64(uuid->data + 8);

	parts->time_ms = (int64) (high >> 16);
	parts->version = (int) ((high >> 12) & 0xF);
	parts->reserved = (int) ((high >> 1) & 0x7FF);
	parts->variant = (int) (low >> 62);
	parts->id = (int64) (((high & 1) << 62) | (low & SNOWID_UUID_LOW62));
}

static char *
snowid_uuid_text(pg_uuid_t *uuid)
{
	return DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(uuid)));
}

/* A time field as text (every value of the field is a valid timestamptz). */
static char *
snowid_time_ms_text(int64 ms)
{
	return pstrdup(timestamptz_to_str((ms - SNOWID_UNIX_TO_PG_MS) * 1000));
}

Datum
snowid_to_uuid(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT64(0);
	SnowidLayout layout;
	int			node_id;
	pg_uuid_t  *uuid = (pg_uuid_t *) palloc(sizeof(pg_uuid_t));

	snowid_layout_for(id, &layout, &node_id);
	snowid_uuid_make(&layout, id, uuid);
	PG_RETURN_UUID_P(uuid);
}

/*
 * The ID a UUID holds, or an error unless snowid_to_uuid() under the layout
 * in force makes that very UUID of it.
 */
Datum
snowid_from_uuid(PG_FUNCTION_ARGS)
{
	pg_uuid_t  *uuid = PG_GETARG_UUID_P(0);
	SnowidUuidParts parts;
	SnowidLayout layout;
	int			node_id;
	int64		expected_ms;

	snowid_uuid_split(uuid, &parts);
	if (parts.version != 7)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("uuid %s does not hold a snowid", snowid_uuid_text(uuid)),
				 errdetail("It is a version %d UUID; snowid_to_uuid() makes version 7 UUIDs.",
						   parts.version)));
	if (parts.variant != 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("uuid %s does not hold a snowid", snowid_uuid_text(uuid)),
				 errdetail("Its variant bits (64 and 65) are %d%d; an RFC 9562 UUID has 10 there.",
						   parts.variant >> 1, parts.variant & 1)));
	if (parts.reserved != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("uuid %s does not hold a snowid", snowid_uuid_text(uuid)),
				 errdetail("Its bits 52 to 62 are not all zero, as they are in every UUID snowid_to_uuid() makes."),
				 errhint("A version 7 UUID from uuidv7() or another generator has random bits there.")));

	snowid_current_layout(&layout, &node_id);
	if (!snowid_id_in_layout(&layout, parts.id))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("uuid %s does not hold a snowid of the layout in force",
						snowid_uuid_text(uuid)),
				 errdetail("It holds " INT64_FORMAT ", but with snowid.id_bits = %d every snowid is below " UINT64_FORMAT ".",
						   parts.id, layout.id_bits,
						   UINT64CONST(1) << layout.id_bits),
				 errhint("It was made under a layout with more ID bits, or not by snowid_to_uuid().")));

	expected_ms = snowid_uuid_time_ms(&layout, snowid_id_tick(&layout, parts.id));
	if (parts.time_ms != expected_ms)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("uuid %s does not hold a snowid of the layout in force",
						snowid_uuid_text(uuid)),
				 errdetail("Its time field says %s, but under the layout in force the snowid it holds, " INT64_FORMAT ", has the time %s.",
						   snowid_time_ms_text(parts.time_ms), parts.id,
						   snowid_time_ms_text(expected_ms)),
				 errhint("It was made under another snowid.epoch, snowid.tick or other bit widths, or not by snowid_to_uuid().")));

	PG_RETURN_INT64(parts.id);
}

Datum
snowid_next_uuid(PG_FUNCTION_ARGS)
{
	int64		id = snowid_next_id();
	SnowidLayout layout;
	int			node_id;
	pg_uuid_t  *uuid = (pg_uuid_t *) palloc(sizeof(pg_uuid_t));

	snowid_current_layout(&layout, &node_id);
	snowid_uuid_make(&layout, id, uuid);
	PG_RETURN_UUID_P(uuid);
}
