import { type Kysely, sql } from 'kysely';

/**
 * An activity's datastream channels as bytes (docs/tracking-activities.md, "Storage"): each
 * channel's values are float64 little-endian, NaN where a sample has no value of the datatype,
 * instead of a float8[]. Reading a float8[] makes PostgreSQL send every element through its
 * binary or text output function (691,200 calls for a 24-hour activity of 8 datatypes); bytes go
 * out as they are stored, and the API reads them as a Float64Array without parsing. The column
 * stays readable from SQL: `activity_channel_values(bytes)` gives the float8[] back (NULL where
 * NaN), `activity_channel_bytes(float8[])` writes one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // float8send is big-endian: its 8 bytes reversed. NULL (no value) is stored as NaN.
  await sql`
    create function activity_channel_bytes(vals float8[]) returns bytea
    language sql immutable strict parallel safe as $$
      select coalesce(string_agg(
        case when v is null or v = 'NaN'::float8 then '\\x000000000000f87f'::bytea
        else substring(b from 8 for 1) || substring(b from 7 for 1) || substring(b from 6 for 1)
          || substring(b from 5 for 1) || substring(b from 4 for 1) || substring(b from 3 for 1)
          || substring(b from 2 for 1) || substring(b from 1 for 1) end,
        ''::bytea order by i), ''::bytea)
      from unnest(vals) with ordinality as u(v, i), lateral (select float8send(v) as b) as s
    $$`.execute(db);
  // IEEE 754 by hand (PostgreSQL has no bytea-to-float8 cast); exact for every finite double.
  await sql`
    create function activity_channel_values(data bytea) returns float8[]
    language sql immutable strict parallel safe as $$
      select coalesce(array_agg(
        case
          when e = 2047 then null
          when e = 0 then s * m * (2::float8 ^ -1074)
          else s * (1 + m * (2::float8 ^ -52)) * (2::float8 ^ (e - 1023))
        end order by i), '{}')
      from (
        select i,
          case when bits < 0 then -1::float8 else 1::float8 end as s,
          ((bits >> 52) & 2047)::int as e,
          (bits & 4503599627370495)::float8 as m
        from (
          select i,
            (get_byte(data, i * 8)::bigint)
            | (get_byte(data, i * 8 + 1)::bigint << 8)
            | (get_byte(data, i * 8 + 2)::bigint << 16)
            | (get_byte(data, i * 8 + 3)::bigint << 24)
            | (get_byte(data, i * 8 + 4)::bigint << 32)
            | (get_byte(data, i * 8 + 5)::bigint << 40)
            | (get_byte(data, i * 8 + 6)::bigint << 48)
            | (get_byte(data, i * 8 + 7)::bigint << 56) as bits
          from generate_series(0, length(data) / 8 - 1) as i
        ) as words
      ) as parts
    $$`.execute(db);
  await sql`
    alter table activity_stream_channels
      alter column "values" type bytea using activity_channel_bytes("values")`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table activity_stream_channels
      alter column "values" type double precision[] using activity_channel_values("values")`.execute(db);
  await sql`drop function activity_channel_values(bytea)`.execute(db);
  await sql`drop function activity_channel_bytes(float8[])`.execute(db);
}
