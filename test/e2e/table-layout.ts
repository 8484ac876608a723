/**
 * The console's record tables as a person sees them at one width: whether a table is wider than
 * its box (it then scrolls inside it), and whether a shadow marks each edge beyond which there is
 * more to see. The shadow is painted, not in the DOM: it is read from a screenshot of the box,
 * as the column of pixels just inside each edge (between the rounded corners), every one of them
 * darker than the card when a shadow lies there.
 */
import type { Page } from 'playwright-core';
import { decodePng, type Pixels } from './png.js';

export interface TableLayout {
  /** The table's name for screen readers (its box's aria-label). */
  name: string;
  /** Wider than its box: it scrolls sideways. */
  scrolls: boolean;
  /** A shadow at the box's left and right edge, as painted now. */
  shadow: { left: boolean; right: boolean };
}

/** Darker than the card's white by this much, everywhere along the edge: a shadow, not a line of text. */
const SHADOW = 20;

const BOXES = `[...document.querySelectorAll('.table-wrap')].map((box) => ({ name: box.getAttribute('aria-label') ?? '', scrolls: box.scrollWidth > box.clientWidth + 1 }))`;

/** Every table of the page as it is now (scrolled as it is). */
export async function tableLayouts(page: Page): Promise<TableLayout[]> {
  const boxes = (await page.evaluate(BOXES)) as { name: string; scrolls: boolean }[];
  const layouts: TableLayout[] = [];
  for (const [i, box] of boxes.entries()) {
    const shot = await page.locator('.table-wrap').nth(i).screenshot();
    const pixels = decodePng(shot);
    layouts.push({ ...box, shadow: { left: shaded(pixels, 3), right: shaded(pixels, pixels.width - 4) } });
  }
  return layouts;
}

/** Scrolls the i-th table's box to its right end. */
export async function scrollTableToEnd(page: Page, i: number): Promise<void> {
  await page.evaluate(`(() => { const box = document.querySelectorAll('.table-wrap')[${i}]; box.scrollLeft = box.scrollWidth; })()`);
}

/** Whether every pixel of column x, away from the rounded corners, is darker than the card (the box's brightest pixel). */
function shaded(pixels: Pixels, x: number): boolean {
  let card = 0;
  for (let y = 0; y < pixels.height; y++) for (let i = 0; i < pixels.width; i++) card = Math.max(card, pixels.luminance(i, y));
  let brightest = 0;
  for (let y = 10; y < pixels.height - 10; y++) brightest = Math.max(brightest, pixels.luminance(x, y));
  return brightest < card - SHADOW;
}
