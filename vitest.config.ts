import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: [
      'spec/**/*.test.ts',
      'fixtures/**/*.test.ts',
      'generators/**/*.test.ts',
      'packages/*/test/**/*.test.ts',
      'packages/*/src/**/*.test.ts',
    ],
    exclude: ['**/node_modules/**', '**/dist/**'],
    typecheck: {
      enabled: true,
      checker: 'tsc',
      tsconfig: './tsconfig.json',
      include: ['packages/*/test/**/*.test-d.ts'],
      exclude: ['**/node_modules/**', '**/dist/**'],
    },
  },
});
