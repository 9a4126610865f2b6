#!/usr/bin/env node
/** The `sdgw-admin` command: see `../admin.ts` for the commands. */
import { ADMIN_USAGE, runAdmin, wantsAdminHelp } from "../admin.ts";

if (wantsAdminHelp(process.argv.slice(2))) {
  console.log(ADMIN_USAGE);
  process.exit(0);
}
// No top-level await: the command is also built as CommonJS.
runAdmin(process.argv.slice(2)).then(
  (out) => console.log(JSON.stringify(out, null, 2)),
  (e: unknown) => {
    console.error(`sdgw-admin: ${(e as Error).message}`);
    process.exit(1);
  },
);
