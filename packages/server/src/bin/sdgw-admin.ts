#!/usr/bin/env node
/** The `sdgw-admin` command: see `../admin.ts` for the commands. */
import { ADMIN_USAGE, runAdmin, wantsAdminHelp } from "../admin.ts";

if (wantsAdminHelp(process.argv.slice(2))) {
  console.log(ADMIN_USAGE);
  process.exit(0);
}
try {
  console.log(JSON.stringify(await runAdmin(process.argv.slice(2)), null, 2));
} catch (e) {
  console.error(`sdgw-admin: ${(e as Error).message}`);
  process.exit(1);
}
