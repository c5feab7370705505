#!/usr/bin/env python3
"""Writes a data directory whose catalog holds N entries, copied in turn from the catalog of a
real one, for timing start-up at store counts whose states do not fit the disk
(bench/RESULTS.md, "Start-up at 10^6 catalog entries").

Only the catalog is written (data_dir/state/catalog, state_db.h): the states its entries name
are absent, so the directory is for starting and stopping adaptd, not for calls (a call that
loads a store would find its state missing and fail the store). Store names are
t<i % tenants>/s<i>. Needs the `lmdb` package (pip install lmdb).

  python3 bench/residency/synthetic_catalog.py --source DATA_DIR --target NEW_DATA_DIR \\
      --stores 1000000
"""
import argparse
import os
import sys

import lmdb


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, help="a data directory written by adaptd")
    parser.add_argument("--target", required=True, help="the data directory to write (new)")
    parser.add_argument("--stores", type=int, required=True, help="catalog entries to write")
    parser.add_argument("--tenants", type=int, default=10, help="tenants the stores are spread over")
    args = parser.parse_args()
    if args.stores < 1 or args.tenants < 1:
        sys.exit("--stores and --tenants must be at least 1")
    source_dir = os.path.join(args.source, "state", "catalog")
    if not os.path.exists(os.path.join(source_dir, "data.mdb")):
        sys.exit(f"{source_dir}: no catalog (start adaptd on the directory once to move it there)")
    target_dir = os.path.join(args.target, "state", "catalog")
    if os.path.exists(args.target) and os.listdir(args.target):
        sys.exit(f"{args.target}: not empty")
    os.makedirs(target_dir)

    source = lmdb.open(source_dir, readonly=True, lock=False, max_dbs=2, subdir=True)
    with source.begin() as txn:
        catalog = source.open_db(b"catalog", txn=txn, create=False)
        values = [value for _, value in txn.cursor(db=catalog)]
    source.close()
    if not values:
        sys.exit(f"{source_dir}: the catalog is empty")

    keys = sorted(f"t{i % args.tenants}/s{i}".encode() for i in range(args.stores))
    target = lmdb.open(target_dir, map_size=max(1 << 30, 4 * args.stores * 1024), max_dbs=2,
                       subdir=True, sync=True)
    catalog = target.open_db(b"catalog")
    target.open_db(b"meta")
    written = 0
    while written < len(keys):
        with target.begin(write=True) as txn:
            cursor = txn.cursor(db=catalog)
            for key in keys[written:written + 100000]:
                cursor.put(key, values[written % len(values)], append=True)
                written += 1
    target.sync(True)
    target.close()
    print(f"{args.target}: {written} catalog entries "
          f"({os.path.getsize(os.path.join(target_dir, 'data.mdb')) / 2**20:.1f} MiB), "
          f"copied in turn from {len(values)}")


if __name__ == "__main__":
    main()
