#!/usr/bin/env node
/** The `sdgw-admin` command: see `../admin.ts` for the commands. */
import { runAdmin } from "../admin.ts";

try {
  console.log(JSON.stringify(runAdmin(process.argv.slice(2)), null, 2));
} catch (e) {
  console.error(`sdgw-admin: ${(e as Error).message}`);
  process.exit(1);
}
